/**
 * A text field for template values (or, with `preview="expression"`, a condition's expression) that
 * suggests `ctx.` paths of known output variables as you type and previews what it resolves to.
 */
import { useId, useRef, useState, type KeyboardEvent } from 'react';

import { suggest } from '../../graph/context';
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
  const [caret, setCaret] = useState<number | null>(null);
  const [active, setActive] = useState(0);
  const listId = useId();
  const { token, items } = caret === null ? { token: '', items: [] } : suggest(paths, value.slice(0, caret));
  const open = items.length > 0 && !readOnly;

  const pick = (path: string) => {
    const at = caret ?? value.length;
    const start = at - token.length;
    const next = value.slice(0, start) + path + value.slice(at);
    onChange(next);
    const pos = start + path.length;
    setCaret(pos);
    requestAnimationFrame(() => input.current?.setSelectionRange(pos, pos));
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (!open) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((i) => (i + (e.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length);
    } else if (e.key === 'Enter' || e.key === 'Tab') {
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
        spellCheck={false}
        onChange={(e) => {
          onChange(e.target.value);
          setCaret(e.target.selectionStart);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
        onKeyUp={(e) => setCaret(e.currentTarget.selectionStart)}
        onClick={(e) => setCaret(e.currentTarget.selectionStart)}
        onBlur={() => window.setTimeout(() => setCaret(null), 150)}
      />
      {open && (
        <ul className="suggestions" id={listId} role="listbox" data-testid="template-suggestions">
          {items.map((path, i) => (
            <li
              key={path}
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
