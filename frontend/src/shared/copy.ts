/** Copy text to the clipboard with a toast either way (the user can still select the text by hand). */
import { toast } from './toasts';

export async function copyText(text: string, what: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    toast('success', `${what} copied`);
  } catch {
    toast('warning', `Copy failed: select the ${what.toLowerCase()} and copy it by hand`);
  }
}
