/** The "+" in the middle of a hovered or selected edge: opens the node picker to insert a node there. */
import { EdgeLabelRenderer } from '@xyflow/react';
import { useEffect, useMemo, useRef, useState } from 'react';

import { openNodePicker } from '../canvas/NodePicker';
import '../canvas/wiring.css';

type HoverHandlers = { onMouseEnter: () => void; onMouseLeave: () => void };

/**
 * Hover of the edge's path or of its button (which lives in another layer): the button stays while the
 * pointer moves from one to the other, and goes a moment after it left both.
 */
export function useEdgeHover(): { shown: boolean; handlers: HoverHandlers } {
  const [shown, setShown] = useState(false);
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  const handlers = useMemo(
    () => ({
      onMouseEnter: () => {
        window.clearTimeout(timer.current);
        setShown(true);
      },
      onMouseLeave: () => {
        window.clearTimeout(timer.current);
        timer.current = window.setTimeout(() => setShown(false), 200);
      },
    }),
    [],
  );
  return { shown, handlers };
}

export function EdgeInsertButton({ edgeId, x, y, offset, handlers }: { edgeId: string; x: number; y: number; offset: number; handlers: HoverHandlers }) {
  return (
    <EdgeLabelRenderer>
      <button
        type="button"
        className="fd-edge__insert nodrag nopan"
        style={{ transform: `translate(-50%, -50%) translate(${x}px, ${y + offset}px)` }}
        aria-label="Insert a node here"
        title="Insert a node here"
        data-testid="edge-insert"
        data-edge-id={edgeId}
        {...handlers}
        onClick={(e) => {
          const r = e.currentTarget.getBoundingClientRect();
          openNodePicker({ clientX: r.left + r.width / 2, clientY: r.bottom + 4, link: { kind: 'split', edgeId } });
        }}
      >
        +
      </button>
    </EdgeLabelRenderer>
  );
}
