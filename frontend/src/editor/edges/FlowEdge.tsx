/** The canvas edge: shows the path a run took, and validation problems as a label. */
import { BaseEdge, EdgeLabelRenderer, getBezierPath, type EdgeProps } from '@xyflow/react';
import { memo } from 'react';

import type { EditorEdge } from '../../graph/model';
import { edgeRunState } from '../../graph/runPath';
import { displayStatus } from '../../runs/runReducer';
import { useEditor } from '../storeContext';

function FlowEdgeView(props: EdgeProps<EditorEdge>) {
  const { id, source, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, selected, markerEnd } = props;
  const sourceNode = useEditor((s) => s.nodes.find((n) => n.id === source));
  const sourceRun = useEditor((s) => s.run?.nodes[source]);
  const problems = useEditor((s) => s.problemIndex.byEdge[id]);
  const edge = useEditor((s) => s.edges.find((e) => e.id === id));
  const status = displayStatus(sourceRun);
  const runState = edge && status ? edgeRunState(edge, sourceNode, { status, output: sourceRun?.output }) : 'idle';
  const [path, labelX, labelY] = getBezierPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition });
  const problem = problems?.[0];
  const classes = ['fd-edge', `fd-edge--${runState}`];
  if (selected) classes.push('is-selected');
  if (problem) classes.push(problem.severity === 'warning' ? 'has-warning' : 'has-error');
  return (
    <>
      <BaseEdge id={id} path={path} className={classes.join(' ')} markerEnd={markerEnd} interactionWidth={18} />
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
