/** The React Flow canvas: drop from the palette, validated connections, selection, minimap and controls. */
import {
  Background,
  BackgroundVariant,
  Controls,
  MarkerType,
  MiniMap,
  ReactFlow,
  useNodesInitialized,
  useReactFlow,
  type Connection,
  type FinalConnectionState,
  type IsValidConnection,
  type NodeChange,
} from '@xyflow/react';
import { useCallback, useEffect, useRef, useState, type DragEvent, type MouseEvent as ReactMouseEvent } from 'react';

import { checkConnection } from '../graph/connect';
import { isNodeType, NODE_TYPE_INFO, type EditorEdge, type EditorNode } from '../graph/model';
import { useTheme } from '../shared/theme';
import { toast } from '../shared/toasts';
import { edgeTypes, nodeTypes } from './nodeTypes';
import { PALETTE_MIME } from './palette/NodePalette';
import { CanvasOverlays } from './canvas/CanvasOverlays';
import { NodePickerHost, openPickerAtDrop } from './canvas/NodePicker';
import { useKeepInView } from './canvas/useKeepInView';
import { FIT_PADDING } from './canvas/viewport';
import { allMeasured, nodeIndex } from './editorStore';
import { useEditor, useEditorStoreApi } from './storeContext';

const DEFAULT_EDGE_OPTIONS = { markerEnd: { type: MarkerType.ArrowClosed, width: 7, height: 7, color: '#9ca3af' } };
const PRO_OPTIONS = { hideAttribution: true };
const FIT_OPTIONS = { padding: FIT_PADDING, maxZoom: 1.1 };
const MINIMAP_STYLE = { width: 160, height: 100 };
// Arrays and callbacks handed to <ReactFlow> must keep their identity: it copies each changed prop into its
// own store, and every store update re-runs the selectors of all 300 nodes and 600 edges.
const SNAP_GRID: [number, number] = [10, 10];
const MULTI_SELECTION_KEYS = ['Meta', 'Control'];

function minimapColor(node: EditorNode): string {
  return NODE_TYPE_INFO[node.type].color;
}

/** False until `ready` has been true for one idle moment (the first paint of the settled canvas is done). */
function useAfterPaint(ready: boolean): boolean {
  const [after, setAfter] = useState(false);
  useEffect(() => {
    if (!ready || after) return;
    if (typeof window.requestIdleCallback === 'function') {
      const handle = window.requestIdleCallback(() => setAfter(true), { timeout: 300 });
      return () => window.cancelIdleCallback(handle);
    }
    const timer = window.setTimeout(() => setAfter(true), 50);
    return () => window.clearTimeout(timer);
  }, [ready, after]);
  return after;
}

export function EditorCanvas() {
  const store = useEditorStoreApi();
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const readOnly = useEditor((s) => s.readOnly);
  const onNodesChange = useEditor((s) => s.onNodesChange);
  const onEdgesChange = useEditor((s) => s.onEdgesChange);
  const { screenToFlowPosition, fitView } = useReactFlow<EditorNode, EditorEdge>();
  const initialized = useNodesInitialized();
  const { theme } = useTheme();
  const [ready, setReady] = useState(false);
  const canvasRef = useRef<HTMLDivElement>(null);
  useKeepInView(canvasRef);

  // Fit the graph once its nodes are measured; `data-ready` tells tests the viewport has settled.
  // Sizes are recorded on the nodes in place (recordMeasuredSizes), which React Flow's own "initialized"
  // flag only notices at its next update: so also fit as soon as a batch of sizes completes the set.
  const fitRequested = useRef(false);
  const fitOnce = useCallback(() => {
    if (fitRequested.current) return;
    fitRequested.current = true;
    performance.mark('flowdeck:nodes-measured');
    void fitView(FIT_OPTIONS).then(() => {
      performance.mark('flowdeck:canvas-ready');
      setReady(true);
    });
  }, [fitView]);
  useEffect(() => {
    if (initialized && nodes.length > 0) fitOnce();
  }, [initialized, nodes.length, fitOnce]);
  const handleNodesChange = useCallback(
    (changes: NodeChange<EditorNode>[]) => {
      onNodesChange(changes);
      if (!fitRequested.current && changes.some((c) => c.type === 'dimensions')) {
        const current = store.getState().nodes;
        if (current.length > 0 && allMeasured(current)) fitOnce();
      }
    },
    [onNodesChange, store, fitOnce],
  );
  const showMinimap = useAfterPaint(ready);
  const [hint, setHint] = useState<string | null>(null);
  const lastRefusal = useRef<string | null>(null);

  const isValidConnection = useCallback<IsValidConnection<EditorEdge>>(
    (c) => {
      const s = store.getState();
      const check = checkConnection(s.nodes, s.edges, { source: c.source, target: c.target, sourceHandle: c.sourceHandle ?? null });
      const reason = check.ok ? null : check.reason;
      lastRefusal.current = reason;
      setHint(reason);
      return check.ok;
    },
    [store],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      const result = store.getState().connect(c);
      if (!result.ok) toast('error', result.reason);
      lastRefusal.current = null;
    },
    [store],
  );

  const onConnectStart = useCallback(() => {
    lastRefusal.current = null;
    setHint(null);
  }, []);

  const onConnectEnd = useCallback((event: MouseEvent | TouchEvent, state: FinalConnectionState) => {
    // Dropped on a handle that refused: say why (the hint was only visible while dragging).
    if (state.toHandle && !state.isValid && lastRefusal.current) toast('error', lastRefusal.current);
    // Dropped on empty canvas: the node picker, to place a node there wired to the dragged handle.
    else if (!state.toNode && state.fromNode && state.fromHandle) openPickerAtDrop(event, state);
    lastRefusal.current = null;
    setHint(null);
  }, []);

  const onNodeDragStart = useCallback(() => store.getState().beginMove(), [store]);
  const onNodeClick = useCallback((_: unknown, node: EditorNode) => store.getState().openInspector(node.id), [store]);
  const onPaneClick = useCallback(() => store.getState().openInspector(null), [store]);
  // Double-click opens a node's details. Caught on the way down: where nodes cannot be dragged (a run page),
  // the canvas's zoom handler would otherwise take the double click for a zoom and stop it.
  const onDoubleClickCapture = useCallback(
    (e: ReactMouseEvent<HTMLDivElement>) => {
      const id = e.target instanceof Element ? e.target.closest<HTMLElement>('.react-flow__node')?.dataset.id : undefined;
      if (!id || !nodeIndex(store.getState().nodes).has(id)) return;
      e.stopPropagation();
      store.getState().openDetails(id);
    },
    [store],
  );

  const onDragOver = useCallback((e: DragEvent) => {
    if (e.dataTransfer.types.includes(PALETTE_MIME)) {
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    }
  }, []);

  const onDrop = useCallback(
    (e: DragEvent) => {
      const type = e.dataTransfer.getData(PALETTE_MIME);
      if (!isNodeType(type) || store.getState().readOnly) return;
      e.preventDefault();
      const p = screenToFlowPosition({ x: e.clientX, y: e.clientY });
      store.getState().addNode(type, { x: p.x - 110, y: p.y - 30 });
    },
    [screenToFlowPosition, store],
  );

  return (
    <div
      ref={canvasRef}
      className="canvas"
      data-testid="canvas"
      data-ready={ready || nodes.length === 0}
      onDoubleClickCapture={onDoubleClickCapture}
      onDragOver={onDragOver}
      onDrop={onDrop}
    >
      <ReactFlow<EditorNode, EditorEdge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={handleNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={onConnect}
        onConnectStart={onConnectStart}
        onConnectEnd={onConnectEnd}
        isValidConnection={isValidConnection}
        onNodeDragStart={onNodeDragStart}
        onNodeClick={onNodeClick}
        onPaneClick={onPaneClick}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        elementsSelectable
        deleteKeyCode={null}
        selectionKeyCode="Shift"
        multiSelectionKeyCode={MULTI_SELECTION_KEYS}
        defaultEdgeOptions={DEFAULT_EDGE_OPTIONS}
        proOptions={PRO_OPTIONS}
        minZoom={0.15}
        maxZoom={2}
        snapToGrid
        snapGrid={SNAP_GRID}
        colorMode={theme}
      >
        <Background variant={BackgroundVariant.Dots} gap={20} size={1.2} color={theme === 'dark' ? '#3a4150' : '#cbd2dd'} />
        {/* The minimap draws every node again: it waits until the canvas has settled and painted. */}
        {showMinimap && <MiniMap<EditorNode> pannable zoomable nodeColor={minimapColor} nodeStrokeWidth={2} ariaLabel="Minimap" style={MINIMAP_STYLE} />}
        <Controls showInteractive={false} />
        <CanvasOverlays />
        {!readOnly && <NodePickerHost />}
      </ReactFlow>
      {nodes.length === 0 && !readOnly && (
        <div className="canvas__empty" data-testid="canvas-empty">
          <strong>An empty canvas</strong>
          <span>Drag a Start node from the palette, then the steps of your workflow, and wire them up.</span>
        </div>
      )}
      {hint && (
        <div className="canvas__hint" data-testid="connection-hint" role="status">
          Can’t connect: {hint}
        </div>
      )}
    </div>
  );
}
