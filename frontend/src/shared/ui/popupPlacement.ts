/**
 * Where a popup anchored to a field goes so that it stays inside the viewport: below the field, or above
 * it when there is more room there (flip); shifted left when it would pass the right edge (shift); and no
 * taller than the room it has. Pure, in viewport coordinates (for `position: fixed`).
 */
export type Rect = { left: number; top: number; right: number; bottom: number };
export type Size = { width: number; height: number };
export type Placement = { left: number; top: number; maxHeight: number; above: boolean };

const GAP = 2;
const MARGIN = 8;

export function placePopup(anchor: Rect, popup: Size, viewport: Size): Placement {
  const below = viewport.height - anchor.bottom - GAP - MARGIN;
  const aboveRoom = anchor.top - GAP - MARGIN;
  const above = popup.height > below && aboveRoom > below;
  const maxHeight = Math.max(0, above ? aboveRoom : below);
  const height = Math.min(popup.height, maxHeight);
  const top = above ? anchor.top - GAP - height : anchor.bottom + GAP;
  const rightmost = viewport.width - MARGIN - popup.width;
  const left = Math.max(MARGIN, Math.min(anchor.left, rightmost));
  return { left, top, maxHeight, above };
}
