/**
 * The search both the palette and the node picker offer: a query filtering node types, a highlighted
 * one moved by ↑/↓ and taken by Enter, and the ARIA wiring of a combobox over its listbox.
 */
import { useId, useState, type ChangeEvent, type KeyboardEvent } from 'react';

import type { NodeType } from '../../graph/model';
import { filterPalette } from './filter';

export type TypeSearch = {
  query: string;
  setQuery: (query: string) => void;
  /** The types matching the query (and `allowed`), in the palette's order. */
  types: NodeType[];
  /** The index of the highlighted type. */
  current: number;
  setActive: (index: number) => void;
  listId: string;
  optionId: (type: NodeType) => string;
  /** ↑/↓ move the highlight, Enter hands the highlighted type to `pick`; true when the key was one of them. */
  onNavigate: (e: KeyboardEvent<HTMLInputElement>, pick: (type: NodeType) => void) => boolean;
  /** The search input's combobox attributes, value and change handler. */
  inputProps: {
    role: 'combobox';
    'aria-expanded': true;
    'aria-controls': string;
    'aria-activedescendant': string | undefined;
    value: string;
    onChange: (e: ChangeEvent<HTMLInputElement>) => void;
  };
};

export function useTypeSearch(allowed?: (type: NodeType) => boolean): TypeSearch {
  const [query, setRawQuery] = useState('');
  const [active, setActive] = useState(0);
  const listId = useId();
  const types = filterPalette(query).filter((t) => !allowed || allowed(t));
  const current = Math.min(active, Math.max(types.length - 1, 0));
  const optionId = (type: NodeType) => `${listId}-${type}`;
  const setQuery = (next: string) => {
    setRawQuery(next);
    setActive(0);
  };
  const onNavigate = (e: KeyboardEvent<HTMLInputElement>, pick: (type: NodeType) => void): boolean => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (types.length > 0) setActive((current + (e.key === 'ArrowDown' ? 1 : types.length - 1)) % types.length);
      return true;
    }
    if (e.key === 'Enter') {
      e.preventDefault();
      const type = types[current];
      if (type) pick(type);
      return true;
    }
    return false;
  };
  const highlighted = types[current];
  return {
    query,
    setQuery,
    types,
    current,
    setActive,
    listId,
    optionId,
    onNavigate,
    inputProps: {
      role: 'combobox',
      'aria-expanded': true,
      'aria-controls': listId,
      'aria-activedescendant': highlighted ? optionId(highlighted) : undefined,
      value: query,
      onChange: (e) => setQuery(e.target.value),
    },
  };
}
