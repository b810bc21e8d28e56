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

/** Set `data-theme` on <html> from the stored choice and the system setting; returns the theme. */
export function applyTheme(choice: ThemeChoice = storedChoice()): Theme {
  const theme = resolveTheme(choice, systemDark());
  document.documentElement.dataset.theme = theme;
  return theme;
}

const listeners = new Set<() => void>();

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
      setState({ choice, theme: applyTheme(choice) });
    };
    listeners.add(update);
    const media = typeof window.matchMedia === 'function' ? window.matchMedia(QUERY) : null;
    media?.addEventListener('change', update);
    return () => {
      listeners.delete(update);
      media?.removeEventListener('change', update);
    };
  }, []);
  return state;
}
