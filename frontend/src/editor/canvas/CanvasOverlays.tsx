/**
 * What the canvas draws besides nodes and edges, behind them (in React Flow's viewport, so it pans and
 * zooms along): the frame around each loop's body, and the sticky notes (SPEC §1 `notes`: stored with
 * the workflow, never executed). A note shows its text as Markdown (shared/markdown.ts: no raw HTML);
 * a click (or Enter) on it edits the source in place until it loses focus. Notes are moved by their
 * header, resized by their corner, deleted with ×; every change is one undo step.
 */
import { useStore as useFlowStore, ViewportPortal } from '@xyflow/react';
import { memo, useEffect, useMemo, useRef, useState, type MouseEvent, type PointerEvent } from 'react';

import type { NoteJson } from '../../graph/convert';
import { loopFrames } from '../../graph/frames';
import { useEditor, useEditorStoreApi } from '../storeContext';

const NOTE_COLORS = ['#fef08a', '#bbf7d0', '#bfdbfe', '#fbcfe8', '#e5e7eb'];
const MIN_WIDTH = 120;
const MIN_HEIGHT = 60;

function LoopFrames() {
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const frames = useMemo(() => loopFrames(nodes, edges), [nodes, edges]);
  return (
    <>
      {frames.map((f) => (
        <div
          key={f.loopId}
          className="loop-frame"
          data-testid="loop-frame"
          data-loop-id={f.loopId}
          style={{ transform: `translate(${f.x}px, ${f.y}px)`, width: f.width, height: f.height }}
        >
          <span className="loop-frame__label">↻ {f.label}: loop body</span>
        </div>
      ))}
    </>
  );
}

type Drag = { kind: 'move' | 'resize'; startX: number; startY: number; from: NoteJson; key: string };

type Markdown = typeof import('../../shared/markdown');
let markdown: Markdown | null = null;

/** The Markdown renderer, loaded after the canvas (markdown-it stays out of the editor's first bundle). */
function useMarkdown(): Markdown | null {
  const [loaded, setLoaded] = useState(markdown);
  useEffect(() => {
    if (loaded) return;
    let live = true;
    void import('../../shared/markdown').then((m) => {
      markdown = m;
      if (live) setLoaded(m);
    });
    return () => {
      live = false;
    };
  }, [loaded]);
  return loaded;
}

/** The note's text as Markdown (plain text for the moment the renderer loads); a click outside a link (or Enter) edits it. */
export function NoteBody({ text, onEdit }: { text: string; onEdit: (() => void) | null }) {
  const renderer = useMarkdown();
  const html = useMemo(() => renderer?.renderMarkdown(text) ?? null, [renderer, text]);
  const click = (e: MouseEvent<HTMLDivElement>) => {
    if (onEdit && !(e.target as HTMLElement).closest('a')) onEdit();
  };
  return (
    <div
      className="sticky-note__text sticky-note__md"
      data-testid="sticky-note-view"
      role={onEdit ? 'button' : undefined}
      tabIndex={onEdit ? 0 : undefined}
      aria-label={onEdit ? 'Note (click to edit)' : 'Note'}
      onClick={click}
      onKeyDown={(e) => {
        if (onEdit && e.key === 'Enter' && e.target === e.currentTarget) {
          e.preventDefault();
          onEdit();
        }
      }}
      // Safe by construction: markdown-it with raw HTML off and links checked (shared/markdown.ts).
      {...(html === null ? { children: text } : { dangerouslySetInnerHTML: { __html: html } })}
    />
  );
}

const StickyNote = memo(function StickyNote({ note, readOnly }: { note: NoteJson; readOnly: boolean }) {
  const store = useEditorStoreApi();
  const zoom = useFlowStore((s) => s.transform[2]);
  const drag = useRef<Drag | null>(null);
  const size = note.size ?? { width: 220, height: 140 };
  const [editing, setEditing] = useState(false);
  // An empty note is written at once; one with text shows it rendered until clicked.
  const showSource = !readOnly && (editing || note.text.trim() === '');

  const start = (kind: Drag['kind'], e: PointerEvent<HTMLElement>) => {
    if (readOnly || e.button !== 0 || (e.target as HTMLElement).closest('button')) return;
    e.preventDefault();
    e.stopPropagation();
    e.currentTarget.setPointerCapture(e.pointerId);
    drag.current = { kind, startX: e.clientX, startY: e.clientY, from: note, key: `note-${kind}:${note.id}:${Date.now()}` };
  };
  const move = (e: PointerEvent<HTMLElement>) => {
    const d = drag.current;
    if (!d) return;
    const dx = (e.clientX - d.startX) / zoom;
    const dy = (e.clientY - d.startY) / zoom;
    if (d.kind === 'move') {
      store.getState().updateNote(note.id, { position: { x: Math.round(d.from.position.x + dx), y: Math.round(d.from.position.y + dy) } }, d.key);
    } else {
      const from = d.from.size ?? size;
      store.getState().updateNote(
        note.id,
        { size: { width: Math.round(Math.max(MIN_WIDTH, from.width + dx)), height: Math.round(Math.max(MIN_HEIGHT, from.height + dy)) } },
        d.key,
      );
    }
  };
  const end = () => {
    drag.current = null;
  };
  const color = note.color ?? (NOTE_COLORS[0] as string);

  return (
    <div
      className="sticky-note nopan nodrag nowheel"
      data-testid="sticky-note"
      data-note-id={note.id}
      style={{ transform: `translate(${note.position.x}px, ${note.position.y}px)`, width: size.width, height: size.height, ['--note' as string]: color }}
    >
      <div className="sticky-note__head" data-testid="sticky-note-handle" onPointerDown={(e) => start('move', e)} onPointerMove={move} onPointerUp={end} onPointerCancel={end}>
        <span className="sticky-note__grip" aria-hidden>
          ⋮⋮ Note
        </span>
        {!readOnly && (
          <span className="sticky-note__tools">
            <button
              type="button"
              className="sticky-note__btn"
              title="Change colour"
              aria-label="Change note colour"
              data-testid="sticky-note-color"
              onClick={() => store.getState().updateNote(note.id, { color: NOTE_COLORS[(NOTE_COLORS.indexOf(color) + 1) % NOTE_COLORS.length] as string })}
            >
              ◐
            </button>
            <button type="button" className="sticky-note__btn" title="Delete note" aria-label="Delete note" data-testid="sticky-note-delete" onClick={() => store.getState().deleteNote(note.id)}>
              ×
            </button>
          </span>
        )}
      </div>
      {showSource ? (
        <textarea
          className="sticky-note__text"
          value={note.text}
          placeholder="Write a note… (Markdown: **bold**, - lists, [links](https://…))"
          autoFocus={editing}
          aria-label="Note text"
          data-testid="sticky-note-text"
          onBlur={() => setEditing(false)}
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.stopPropagation();
              e.currentTarget.blur();
            }
          }}
          onChange={(e) => store.getState().updateNote(note.id, { text: e.target.value }, `note-text:${note.id}`)}
        />
      ) : (
        <NoteBody text={note.text} onEdit={readOnly ? null : () => setEditing(true)} />
      )}
      {!readOnly && (
        <div className="sticky-note__resize" aria-hidden onPointerDown={(e) => start('resize', e)} onPointerMove={move} onPointerUp={end} onPointerCancel={end} />
      )}
    </div>
  );
});

export function CanvasOverlays() {
  const notes = useEditor((s) => s.notes);
  const readOnly = useEditor((s) => s.readOnly);
  return (
    <ViewportPortal>
      <div className="canvas-overlays">
        <LoopFrames />
        {notes.map((note) => (
          <StickyNote key={note.id} note={note} readOnly={readOnly} />
        ))}
      </div>
    </ViewportPortal>
  );
}
