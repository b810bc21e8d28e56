/** The node clipboard: localStorage (shared by every workflow and tab of this origin), mirrored to the system clipboard. */
import { parseFragment, type Fragment } from '../graph/clipboard';

const KEY = 'flowdeck.clipboard';

export function writeClipboard(fragment: Fragment): void {
  const text = JSON.stringify(fragment);
  window.localStorage.setItem(KEY, text);
  navigator.clipboard?.writeText(text).catch(() => undefined);
}

export function readClipboard(): Fragment | null {
  return parseFragment(window.localStorage.getItem(KEY));
}
