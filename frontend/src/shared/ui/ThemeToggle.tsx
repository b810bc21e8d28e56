/** The theme switch in the top bar: System (follows the OS), Light, Dark; the choice persists. */
import { setThemeChoice, useTheme, type ThemeChoice } from '../theme';

const LABELS: Record<ThemeChoice, string> = { system: '◐ System', light: '☀ Light', dark: '☾ Dark' };

export function ThemeToggle() {
  const { choice, theme } = useTheme();
  return (
    <select
      className="input input--small theme-toggle"
      value={choice}
      aria-label="Colour theme"
      title={`Theme: ${choice}${choice === 'system' ? ` (now ${theme})` : ''}`}
      data-testid="theme-toggle"
      data-theme-now={theme}
      onChange={(e) => setThemeChoice(e.target.value as ThemeChoice)}
    >
      {(Object.keys(LABELS) as ThemeChoice[]).map((c) => (
        <option key={c} value={c}>
          {LABELS[c]}
        </option>
      ))}
    </select>
  );
}
