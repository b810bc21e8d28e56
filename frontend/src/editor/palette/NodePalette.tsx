/**
 * The palette of node types: type to filter, ↑/↓ to choose, Enter to add (keyboard only is enough);
 * or drag one onto the canvas, or click it to add it next to the selected node.
 */
import { useEffect, useId, useRef, useState, type KeyboardEvent } from 'react';

import { NODE_TYPE_INFO, type NodeType } from '../../graph/model';
import { filterPalette } from './filter';

export const PALETTE_MIME = 'application/x-flowdeck-node';

/** Other components (the `/` shortcut) focus the search through this event. */
export const FOCUS_PALETTE_EVENT = 'flowdeck:focus-palette';

export function NodePalette({ onAdd, disabled }: { onAdd: (type: NodeType) => void; disabled: boolean }) {
  const [query, setQuery] = useState('');
  const [active, setActive] = useState(0);
  const search = useRef<HTMLInputElement>(null);
  const listId = useId();
  const types = filterPalette(query);
  const current = Math.min(active, Math.max(types.length - 1, 0));

  useEffect(() => {
    const focus = () => search.current?.focus();
    window.addEventListener(FOCUS_PALETTE_EVENT, focus);
    return () => window.removeEventListener(FOCUS_PALETTE_EVENT, focus);
  }, []);

  const add = (type: NodeType) => {
    if (!disabled) onAdd(type);
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (types.length > 0) setActive((current + (e.key === 'ArrowDown' ? 1 : types.length - 1)) % types.length);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      const type = types[current];
      if (type) {
        add(type);
        setQuery('');
        setActive(0);
      }
    } else if (e.key === 'Escape') {
      e.stopPropagation();
      if (query) setQuery('');
      else search.current?.blur();
    }
  };

  return (
    <aside className="palette" aria-label="Nodes" data-testid="palette">
      <h3 className="panel-title">Nodes</h3>
      <input
        ref={search}
        className="input palette__search"
        type="search"
        placeholder="Search nodes…  ( / )"
        aria-label="Search nodes"
        role="combobox"
        aria-expanded
        aria-controls={listId}
        aria-activedescendant={types[current] ? `${listId}-${types[current]}` : undefined}
        value={query}
        disabled={disabled}
        data-testid="palette-search"
        onChange={(e) => {
          setQuery(e.target.value);
          setActive(0);
        }}
        onKeyDown={onKeyDown}
      />
      <p className="palette__hint">Enter adds the highlighted node next to the selected one; or drag onto the canvas.</p>
      <div role="listbox" id={listId} aria-label="Node types">
        {types.length === 0 && (
          <div className="muted small" data-testid="palette-empty">
            No node matches “{query}”.
          </div>
        )}
        {types.map((type, i) => {
          const info = NODE_TYPE_INFO[type];
          return (
            <button
              key={type}
              id={`${listId}-${type}`}
              type="button"
              role="option"
              aria-selected={i === current && query !== ''}
              className={`palette__item${i === current && query !== '' ? ' is-active' : ''}`}
              draggable={!disabled}
              disabled={disabled}
              data-testid={`palette-${type}`}
              style={{ ['--accent' as string]: info.color }}
              onDragStart={(e) => {
                e.dataTransfer.setData(PALETTE_MIME, type);
                e.dataTransfer.effectAllowed = 'copy';
              }}
              onClick={() => add(type)}
            >
              <span className="palette__icon">{info.icon}</span>
              <span className="palette__text">
                <span className="palette__title">{info.title}</span>
                <span className="palette__desc">{info.description}</span>
              </span>
            </button>
          );
        })}
      </div>
    </aside>
  );
}
