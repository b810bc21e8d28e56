import { describe, expect, it } from 'vitest';

import { revealShift, union } from './viewport';

const canvas = { left: 0, top: 0, right: 1000, bottom: 600 };
const minimap = { left: 825, top: 485, right: 985, bottom: 585 };
const controls = { left: 15, top: 480, right: 45, bottom: 585 };

describe('revealing a node', () => {
  it('leaves a node in sight where it is', () => {
    expect(revealShift({ left: 300, top: 200, right: 520, bottom: 270 }, canvas, [minimap, controls])).toEqual({ x: 0, y: 0 });
  });

  it('pans a node cut off by a narrower canvas (a panel opened) back in, with a margin', () => {
    const narrower = { ...canvas, right: 600 };
    expect(revealShift({ left: 700, top: 200, right: 920, bottom: 270 }, narrower)).toEqual({ x: -344, y: 0 });
    const shorter = { ...canvas, bottom: 330 };
    expect(revealShift({ left: 300, top: 400, right: 520, bottom: 470 }, shorter)).toEqual({ x: 0, y: -164 });
  });

  it('moves a node out from under the minimap and the controls', () => {
    const under = { left: 850, top: 500, right: 950, bottom: 560 };
    const shift = revealShift(under, canvas, [minimap]);
    expect(shift.x).toBe(0);
    expect(560 + shift.y).toBeLessThanOrEqual(minimap.top);
    const left = revealShift({ left: 20, top: 500, right: 240, bottom: 560 }, canvas, [controls]);
    expect(560 + left.y).toBeLessThanOrEqual(controls.top);
  });

  it('centres what is larger than the canvas', () => {
    expect(revealShift({ left: -100, top: 100, right: 1300, bottom: 200 }, canvas)).toEqual({ x: -100, y: 0 });
  });

  it('bounds several nodes', () => {
    expect(union([])).toBeNull();
    expect(union([{ left: 0, top: 5, right: 10, bottom: 20 }, { left: -5, top: 10, right: 3, bottom: 30 }])).toEqual({ left: -5, top: 5, right: 10, bottom: 30 });
  });
});
