/**
 * Keeping nodes in sight when the canvas changes size (a side or bottom panel opens) and when it is fitted:
 * the minimap (bottom right) and the zoom controls (bottom left) sit over the canvas, so no node may be
 * left under them. Pure: screen rectangles in, a pan out.
 */

export type Rect = { left: number; top: number; right: number; bottom: number };

/** What fitView leaves free around the graph: room for the controls (left) and the minimap (bottom). */
export const FIT_PADDING = { top: '32px', right: '32px', bottom: '128px', left: '64px' } as const;

/** How far from the canvas edges a revealed node stays. */
const MARGIN = 24;

function overlaps(a: Rect, b: Rect): boolean {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

function moved(r: Rect, dx: number, dy: number): Rect {
  return { left: r.left + dx, right: r.right + dx, top: r.top + dy, bottom: r.bottom + dy };
}

/** The smallest shift along one axis that puts [lo, hi] inside [min, max] (centred when it cannot fit). */
function shiftInto(lo: number, hi: number, min: number, max: number): number {
  if (hi - lo > max - min) return (min + max) / 2 - (lo + hi) / 2;
  if (lo < min) return min - lo;
  if (hi > max) return max - hi;
  return 0;
}

export function union(rects: readonly Rect[]): Rect | null {
  if (rects.length === 0) return null;
  return {
    left: Math.min(...rects.map((r) => r.left)),
    top: Math.min(...rects.map((r) => r.top)),
    right: Math.max(...rects.map((r) => r.right)),
    bottom: Math.max(...rects.map((r) => r.bottom)),
  };
}

/**
 * How far to pan (screen px, added to the viewport's x and y) so that `target` lies inside `canvas` (with a
 * margin) and under none of `covers` (minimap, controls); `{x: 0, y: 0}` when it already does.
 */
export function revealShift(target: Rect, canvas: Rect, covers: readonly Rect[] = []): { x: number; y: number } {
  const area = { left: canvas.left + MARGIN, top: canvas.top + MARGIN, right: canvas.right - MARGIN, bottom: canvas.bottom - MARGIN };
  let x = shiftInto(target.left, target.right, area.left, area.right);
  let y = shiftInto(target.top, target.bottom, area.top, area.bottom);
  for (const cover of covers) {
    const at = moved(target, x, y);
    if (!overlaps(at, cover)) continue;
    const up = cover.top - MARGIN - at.bottom; // move above it, if that stays in the canvas
    if (at.top + up >= area.top) {
      y += up;
      continue;
    }
    const centre = (cover.left + cover.right) / 2;
    x += centre > (at.left + at.right) / 2 ? cover.left - MARGIN - at.right : cover.right + MARGIN - at.left;
  }
  return { x: Math.round(x), y: Math.round(y) };
}
