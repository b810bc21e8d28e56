/**
 * Light or dark: follows the system (prefers-color-scheme) unless the user picked one; the choice is
 * kept in localStorage. The resolved theme is `data-theme` on <html> (theme.css keys off it).
 */
import { useEffect, useState } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';
export type Theme = 'light' | 'dark';

const KEY = 'flowdeck.theme';
const QUERY = '(prefers-color-scheme: dark)';

export function storedChoice(): ThemeChoice {
  try {
    const value = localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

export function resolveTheme(choice: ThemeChoice, systemDark: boolean): Theme {
  return choice === 'system' ? (systemDark ? 'dark' : 'light') : choice;
}

function systemDark(): boolean {
  return typeof window.matchMedia === 'function' && window.matchMedia(QUERY).matches;
}

const listeners = new Set<() => void>();
let following = false;

/**
 * Set `data-theme` on <html> from the stored choice and the system setting; returns the theme. The first
 * call (main.tsx, before the first render) also starts following the system setting, whatever is mounted.
 */
export function applyTheme(choice: ThemeChoice = storedChoice()): Theme {
  const theme = resolveTheme(choice, systemDark());
  document.documentElement.dataset.theme = theme;
  if (!following && typeof window.matchMedia === 'function') {
    following = true;
    window.matchMedia(QUERY).addEventListener('change', () => {
      applyTheme();
      listeners.forEach((l) => l());
    });
  }
  return theme;
}

export function setThemeChoice(choice: ThemeChoice): void {
  try {
    if (choice === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // private mode: the choice lasts for this page only
  }
  applyTheme(choice);
  listeners.forEach((l) => l());
}

/** The current choice and resolved theme; follows the system setting live while the choice is "system". */
export function useTheme(): { choice: ThemeChoice; theme: Theme } {
  const [state, setState] = useState(() => ({ choice: storedChoice(), theme: resolveTheme(storedChoice(), systemDark()) }));
  useEffect(() => {
    const update = () => {
      const choice = storedChoice();
      const theme = applyTheme(choice);
      setState((prev) => (prev.choice === choice && prev.theme === theme ? prev : { choice, theme }));
    };
    listeners.add(update);
    update(); // the system may have changed between the first render and now
    return () => {
      listeners.delete(update);
    };
  }, []);
  return state;
}
