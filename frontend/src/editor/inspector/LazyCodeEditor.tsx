/** CodeMirror is the largest dependency: load it on first use, in its own chunk. */
import { lazy, Suspense, type ComponentProps } from 'react';

import type { CodeEditor as CodeEditorImpl } from './CodeEditor';

const Impl = lazy(() => import('./CodeEditor').then((m) => ({ default: m.CodeEditor })));

export function CodeEditor(props: ComponentProps<typeof CodeEditorImpl>) {
  return (
    <Suspense fallback={<div className="code-editor code-editor--loading" style={{ minHeight: props.minHeight ?? 160 }} />}>
      <Impl {...props} />
    </Suspense>
  );
}
