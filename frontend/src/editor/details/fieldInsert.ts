/**
 * Writing a context path into a template field of the node's form, by drop or by keyboard.
 *
 * The fields are controlled React inputs owned by the forms (TemplateInput): a new value reaches the form
 * only through their onChange. Setting the value with the input's own setter and dispatching an `input`
 * event is the way React documents for that (it is what Testing Library's `fireEvent.change` does), so the
 * forms need no knowledge of the details view.
 */
import { insertPath } from './paths';

/** Dragged from the input side: the path (`ctx.loop.item`). */
export const PATH_MIME = 'application/x-flowdeck-ctx-path';

/** A template field of the forms, or null: `data-template-kind` marks TemplateInput's input. */
export function templateField(target: EventTarget | null): HTMLInputElement | null {
  if (!(target instanceof HTMLInputElement) || target.readOnly || target.disabled) return null;
  return target.dataset.templateKind ? target : null;
}

function setValue(field: HTMLInputElement, value: string): void {
  const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')?.set;
  setter?.call(field, value);
  field.dispatchEvent(new Event('input', { bubbles: true }));
}

/** Write `path` into `field` at its caret when it has the focus, else at its end; returns the new value. */
export function insertIntoField(field: HTMLInputElement, path: string): string {
  const focused = field.ownerDocument.activeElement === field;
  const at = focused ? (field.selectionStart ?? field.value.length) : field.value.length;
  const kind = field.dataset.templateKind === 'expression' ? 'expression' : 'template';
  const next = insertPath(field.value, at, path, kind);
  setValue(field, next.value);
  field.focus();
  field.setSelectionRange(next.caret, next.caret);
  return next.value;
}
