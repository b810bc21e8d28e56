/**
 * A text field for template values (or, with `preview="expression"`, a condition's expression) that
 * suggests `ctx.` paths of known output variables as you type (on `ctx`, `ctx.`, and right after `{{ `)
 * and previews what it resolves to. ↓/↑ move to a suggestion, Enter or Tab take it; with none chosen
 * they keep their usual meaning. The list is fixed-positioned so panels cannot clip it, and it flips
 * above the field or shifts left to stay inside the viewport.
 */
import { useId, useLayoutEffect, useRef, useState, type CSSProperties, type KeyboardEvent, type RefObject } from 'react';

import { suggest } from '../../graph/context';
import { placePopup } from '../../shared/ui/popupPlacement';
import type { PreviewKind } from './previewApi';
import { TemplatePreview } from './TemplatePreview';

type Props = {
  value: string;
  onChange: (value: string) => void;
  paths: readonly string[];
  placeholder?: string;
  testId?: string;
  readOnly?: boolean;
  ariaLabel?: string;
  preview?: PreviewKind;
  /** A switch case's expression: the switch's value template, previewed as `value`. */
  switchValue?: string;
};

export function TemplateInput({ value, onChange, paths, placeholder, testId, readOnly, ariaLabel, preview = 'template', switchValue }: Props) {
  const input = useRef<HTMLInputElement>(null);
  const list = useRef<HTMLUListElement>(null);
  const [caret, setCaret] = useState<number | null>(null);
  const [active, setActive] = useState(-1);
  const listId = useId();
  const { token, items } = caret === null ? { token: '', items: [] } : suggest(paths, value.slice(0, caret));
  const open = items.length > 0 && !readOnly;
  const position = usePopupPosition(open, input, list, items.length);

  const pick = (path: string) => {
    const at = caret ?? value.length;
    const start = at - token.length;
    const next = value.slice(0, start) + path + value.slice(at);
    onChange(next);
    const pos = start + path.length;
    setCaret(pos);
    setActive(-1);
    requestAnimationFrame(() => input.current?.setSelectionRange(pos, pos));
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (!open) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((i) => (i < 0 ? (e.key === 'ArrowDown' ? 0 : items.length - 1) : (i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length));
    } else if ((e.key === 'Enter' || e.key === 'Tab') && active >= 0) {
      // Only an option moved to is taken: Enter and Tab otherwise keep their usual meaning (Tab moves on).
      const choice = items[Math.min(active, items.length - 1)];
      if (choice) {
        e.preventDefault();
        pick(choice);
      }
    } else if (e.key === 'Escape') {
      e.stopPropagation();
      setCaret(null);
    }
  };

  return (
    <div className="template-input">
      <input
        ref={input}
        className="input input--mono"
        value={value}
        placeholder={placeholder}
        readOnly={readOnly}
        aria-label={ariaLabel}
        data-testid={testId}
        data-template-kind={preview}
        role="combobox"
        aria-expanded={open}
        aria-controls={listId}
        aria-autocomplete="list"
        aria-activedescendant={open && active >= 0 ? `${listId}-${active}` : undefined}
        spellCheck={false}
        onChange={(e) => {
          onChange(e.target.value);
          setCaret(e.target.selectionStart);
          setActive(-1);
        }}
        onKeyDown={onKeyDown}
        onKeyUp={(e) => setCaret(e.currentTarget.selectionStart)}
        onClick={(e) => setCaret(e.currentTarget.selectionStart)}
        onBlur={() => window.setTimeout(() => setCaret(null), 150)}
      />
      {open && (
        <ul ref={list} className="suggestions" id={listId} role="listbox" data-testid="template-suggestions" style={position}>
          {items.map((path, i) => (
            <li
              key={path}
              id={`${listId}-${i}`}
              role="option"
              aria-selected={i === active}
              className={i === active ? 'is-active' : undefined}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(path);
              }}
            >
              {path}
            </li>
          ))}
        </ul>
      )}
      <TemplatePreview source={value} kind={preview} switchValue={switchValue} />
    </div>
  );
}

const MAX_LIST_HEIGHT = 220;

/** Fixed coordinates for the open list, from the field's and the list's measured boxes (see placePopup). */
function usePopupPosition(
  open: boolean,
  anchor: RefObject<HTMLInputElement | null>,
  popup: RefObject<HTMLUListElement | null>,
  count: number,
): CSSProperties | undefined {
  const [style, setStyle] = useState<CSSProperties | undefined>(undefined);
  useLayoutEffect(() => {
    if (!open) return;
    const place = () => {
      const field = anchor.current?.getBoundingClientRect();
      const list = popup.current;
      if (!field || !list) return;
      const width = Math.max(field.width, 240);
      const height = Math.min(list.scrollHeight, MAX_LIST_HEIGHT);
      const p = placePopup(field, { width, height }, { width: window.innerWidth, height: window.innerHeight });
      setStyle({ position: 'fixed', left: p.left, top: p.top, width, maxHeight: Math.min(p.maxHeight, MAX_LIST_HEIGHT), right: 'auto' });
    };
    place();
    window.addEventListener('resize', place);
    window.addEventListener('scroll', place, true);
    return () => {
      window.removeEventListener('resize', place);
      window.removeEventListener('scroll', place, true);
    };
  }, [open, anchor, popup, count]);
  return open ? style : undefined;
}
