/**
 * The palette of node types: type to filter, ↑/↓ to choose, Enter to add (keyboard only is enough);
 * or drag one onto the canvas, or click it to add it next to the selected node.
 */
import { useEffect, useRef, type KeyboardEvent } from 'react';

import { NODE_TYPE_INFO, type NodeType } from '../../graph/model';
import { useTypeSearch } from './useTypeSearch';

export const PALETTE_MIME = 'application/x-flowdeck-node';

/** Other components (the `/` shortcut) focus the search through this event. */
export const FOCUS_PALETTE_EVENT = 'flowdeck:focus-palette';

export function NodePalette({ onAdd, disabled }: { onAdd: (type: NodeType) => void; disabled: boolean }) {
  const { query, setQuery, types, current, listId, optionId, onNavigate, inputProps } = useTypeSearch();
  const search = useRef<HTMLInputElement>(null);

  useEffect(() => {
    const focus = () => search.current?.focus();
    window.addEventListener(FOCUS_PALETTE_EVENT, focus);
    return () => window.removeEventListener(FOCUS_PALETTE_EVENT, focus);
  }, []);

  const add = (type: NodeType) => {
    if (!disabled) onAdd(type);
  };

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    const added = (type: NodeType) => {
      add(type);
      setQuery('');
    };
    if (onNavigate(e, added)) return;
    if (e.key === 'Escape') {
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
        {...inputProps}
        disabled={disabled}
        data-testid="palette-search"
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
              id={optionId(type)}
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
