/** The palette of the seven node types: drag one onto the canvas, or click to add it in view. */
import { NODE_TYPE_INFO, PALETTE_ORDER, type NodeType } from '../../graph/model';

export const PALETTE_MIME = 'application/x-flowdeck-node';

export function NodePalette({ onAdd, disabled }: { onAdd: (type: NodeType) => void; disabled: boolean }) {
  return (
    <aside className="palette" aria-label="Nodes" data-testid="palette">
      <h3 className="panel-title">Nodes</h3>
      <p className="palette__hint">Drag onto the canvas, or click to add.</p>
      {PALETTE_ORDER.map((type) => {
        const info = NODE_TYPE_INFO[type];
        return (
          <button
            key={type}
            type="button"
            className="palette__item"
            draggable={!disabled}
            disabled={disabled}
            data-testid={`palette-${type}`}
            style={{ ['--accent' as string]: info.color }}
            onDragStart={(e) => {
              e.dataTransfer.setData(PALETTE_MIME, type);
              e.dataTransfer.effectAllowed = 'copy';
            }}
            onClick={() => onAdd(type)}
          >
            <span className="palette__icon">{info.icon}</span>
            <span className="palette__text">
              <span className="palette__title">{info.title}</span>
              <span className="palette__desc">{info.description}</span>
            </span>
          </button>
        );
      })}
    </aside>
  );
}
