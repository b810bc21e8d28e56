/** The frame drawn around each loop's body on the canvas: the bounding box of the body nodes. Pure. */
import { loopBodies } from './context';
import { estimatedHeight, NODE_WIDTH } from './layout';
import type { EditorEdge, EditorNode } from './model';

export type LoopFrame = { loopId: string; label: string; x: number; y: number; width: number; height: number };

const PAD_X = 20;
const PAD_TOP = 36;
const PAD_BOTTOM = 20;

/** One frame per loop with a non-empty body, outermost first (so inner frames are drawn on top). */
export function loopFrames(nodes: readonly EditorNode[], edges: readonly EditorEdge[]): LoopFrame[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const frames: LoopFrame[] = [];
  for (const [loopId, body] of loopBodies(nodes, edges)) {
    const members = [...body].map((id) => byId.get(id)).filter((n): n is EditorNode => n !== undefined);
    if (members.length === 0) continue;
    const left = Math.min(...members.map((n) => n.position.x));
    const top = Math.min(...members.map((n) => n.position.y));
    const right = Math.max(...members.map((n) => n.position.x + (n.measured?.width ?? NODE_WIDTH)));
    const bottom = Math.max(...members.map((n) => n.position.y + estimatedHeight(n)));
    frames.push({
      loopId,
      label: byId.get(loopId)?.data.label ?? loopId,
      x: left - PAD_X,
      y: top - PAD_TOP,
      width: right - left + 2 * PAD_X,
      height: bottom - top + PAD_TOP + PAD_BOTTOM,
    });
  }
  return frames.sort((a, b) => b.width * b.height - a.width * a.height);
}
