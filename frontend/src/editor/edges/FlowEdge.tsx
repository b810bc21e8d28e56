/**
 * The canvas edge: shows the path a run took, and validation problems as a label; while hovered or
 * selected (and editable) a "+" in its middle inserts a node between its ends.
 */
import { BaseEdge, EdgeLabelRenderer, getBezierPath, type EdgeProps } from '@xyflow/react';
import { memo } from 'react';

import { EdgeInsertButton, useEdgeHover } from './EdgeInsertButton';
import { routedPath, routeStillFits } from '../../graph/elkLayout';
import type { EditorEdge } from '../../graph/model';
import { TERMINAL_NODE_STATUSES } from '../../generated/statuses';
import { edgeRunState, type EdgeRunState } from '../../graph/runPath';
import { displayStatus } from '../../runs/runReducer';
import { nodeIndex, type EditorState } from '../editorStore';
import { useEditorShallow } from '../storeContext';
import { own } from '../../shared/dict';

/** What an edge shows besides its geometry: a string and a stable reference, cheap to compare. */
function edgeView(s: EditorState, id: string, source: string, target: string, sourceHandle: string | null | undefined) {
  const problem = s.problemIndex.byEdge[id]?.[0];
  const laid = own(s.routes, id);
  // The auto-layout's route, while both nodes stay where it put them (a stable reference, or undefined).
  const route = laid && routeStillFits(laid, nodeIndex(s.nodes).get(source)?.position, nodeIndex(s.nodes).get(target)?.position) ? laid : undefined;
  const sourceRun = s.run?.nodes[source];
  const status = displayStatus(sourceRun);
  const editable = !s.readOnly;
  if (!status || !TERMINAL_NODE_STATUSES.has(status)) return { runState: 'idle' as EdgeRunState, problem, route, editable };
  const edge = { id, source, target: '', sourceHandle: sourceHandle ?? 'default' };
  return { runState: edgeRunState(edge, nodeIndex(s.nodes).get(source), { status, output: sourceRun?.output }), problem, route, editable };
}

function FlowEdgeView(props: EdgeProps<EditorEdge>) {
  const { id, source, target, sourceHandleId, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, selected, markerEnd } = props;
  // One subscription per edge, O(1) (it used to be four, two of them scanning every node and edge).
  const { runState, problem, route, editable } = useEditorShallow((s) => edgeView(s, id, source, target, sourceHandleId));
  const hover = useEdgeHover();
  let [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  if (route) {
    const routed = routedPath(route, { x: sourceX, y: sourceY }, { x: targetX, y: targetY });
    [path, labelX, labelY] = [routed.path, routed.mid.x, routed.mid.y];
  }
  const classes = ['fd-edge', `fd-edge--${runState}`];
  if (selected) classes.push('is-selected');
  if (route) classes.push('fd-edge--routed');
  if (problem) classes.push(problem.severity === 'warning' ? 'has-warning' : 'has-error');
  return (
    <>
      <BaseEdge id={id} path={path} className={classes.join(' ')} markerEnd={markerEnd} interactionWidth={editable ? 0 : 18} />
      {editable && <path d={path} className="react-flow__edge-interaction" fill="none" strokeOpacity={0} strokeWidth={18} {...hover.handlers} />}
      {editable && (hover.shown || selected) && (
        <EdgeInsertButton edgeId={id} x={labelX} y={labelY} offset={problem ? 22 : 0} handlers={hover.handlers} />
      )}
      {problem && (
        <EdgeLabelRenderer>
          <div
            className={`fd-edge__label fd-edge__label--${problem.severity ?? 'error'}`}
            style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}
            data-testid="edge-problem"
            data-edge-id={id}
            title={problem.message}
          >
            {problem.message}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

export const FlowEdge = memo(FlowEdgeView);
