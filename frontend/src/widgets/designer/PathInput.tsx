/** A path field with suggestions found in the preview run's output (click or arrow keys + Enter to pick). */
import { useId, useMemo, useState } from 'react';

import { filterSuggestions, type PathKind, type PathSuggestion } from '../paths';

type Props = {
  value: string;
  onChange: (value: string) => void;
  suggestions: readonly PathSuggestion[];
  kinds?: readonly PathKind[];
  placeholder?: string;
  testId: string;
  label?: string;
};

export function PathInput({ value, onChange, suggestions, kinds, placeholder = '(whole value)', testId, label }: Props) {
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(0);
  const listId = useId();
  const shown = useMemo(() => {
    const typed = filterSuggestions(suggestions, value, kinds);
    // when the field already holds a full suggestion, show them all (the user is browsing)
    return (typed.length === 1 && typed[0]?.path === value ? filterSuggestions(suggestions, '', kinds) : typed).slice(0, 50);
  }, [suggestions, value, kinds]);

  const pick = (s: PathSuggestion) => {
    onChange(s.path);
    setOpen(false);
  };

  return (
    <div className="path-input">
      <input
        className="input input--mono"
        value={value}
        placeholder={placeholder}
        aria-label={label}
        role="combobox"
        aria-expanded={open && shown.length > 0}
        aria-controls={listId}
        autoComplete="off"
        spellCheck={false}
        data-testid={testId}
        onFocus={() => {
          setOpen(true);
          setActive(0);
        }}
        onBlur={() => setOpen(false)}
        onChange={(e) => {
          onChange(e.target.value);
          setOpen(true);
          setActive(0);
        }}
        onKeyDown={(e) => {
          if (!open || shown.length === 0) return;
          if (e.key === 'ArrowDown') {
            e.preventDefault();
            setActive((a) => Math.min(a + 1, shown.length - 1));
          } else if (e.key === 'ArrowUp') {
            e.preventDefault();
            setActive((a) => Math.max(a - 1, 0));
          } else if (e.key === 'Enter') {
            const s = shown[active];
            if (s) {
              e.preventDefault();
              pick(s);
            }
          } else if (e.key === 'Escape') {
            setOpen(false);
          }
        }}
      />
      {open && shown.length > 0 && (
        <ul className="suggestions path-input__list" id={listId} role="listbox" data-testid="path-suggestions">
          {shown.map((s, i) => (
            <li
              key={s.path || '(root)'}
              role="option"
              aria-selected={i === active}
              className={i === active ? 'is-active' : undefined}
              data-testid="path-suggestion"
              data-path={s.path}
              onMouseDown={(e) => {
                e.preventDefault();
                pick(s);
              }}
              // inside a <label>, a click would also focus the input and reopen the list
              onClick={(e) => e.preventDefault()}
              onMouseEnter={() => setActive(i)}
            >
              <span className="mono">{s.path || '(whole value)'}</span>
              <span className="path-input__kind">{s.kind}</span>
              <span className="path-input__sample">{s.sample}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
