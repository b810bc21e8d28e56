import { describe, expect, it } from 'vitest';

import { placePopup } from './popupPlacement';

const viewport = { width: 1000, height: 800 };

describe('placePopup', () => {
  it('goes below the field, aligned with its left edge, when it fits', () => {
    const p = placePopup({ left: 100, top: 100, right: 400, bottom: 130 }, { width: 300, height: 200 }, viewport);
    expect(p).toEqual({ left: 100, top: 132, maxHeight: 800 - 130 - 2 - 8, above: false });
  });

  it('shifts left to stay inside the right edge', () => {
    const p = placePopup({ left: 850, top: 100, right: 990, bottom: 130 }, { width: 300, height: 200 }, viewport);
    expect(p.left).toBe(1000 - 8 - 300);
    expect(p.left + 300).toBeLessThanOrEqual(viewport.width);
  });

  it('flips above the field near the bottom edge', () => {
    const p = placePopup({ left: 100, top: 700, right: 400, bottom: 730 }, { width: 300, height: 200 }, viewport);
    expect(p.above).toBe(true);
    expect(p.top).toBe(700 - 2 - 200);
  });

  it('never starts left of the viewport, and caps the height at the room it has', () => {
    const p = placePopup({ left: -40, top: 10, right: 100, bottom: 40 }, { width: 300, height: 2000 }, viewport);
    expect(p.left).toBe(8);
    expect(p.above).toBe(false);
    expect(p.top + p.maxHeight).toBeLessThanOrEqual(viewport.height);
  });
});
