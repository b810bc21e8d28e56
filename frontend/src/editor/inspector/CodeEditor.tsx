/** CodeMirror 6 in React: Python (with ctx completions) or JSON; the view is created once per mount. */
import { autocompletion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import { json } from '@codemirror/lang-json';
import { python } from '@codemirror/lang-python';
import { Compartment, EditorState } from '@codemirror/state';
import { EditorView, keymap } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';

type Props = {
  value: string;
  onChange?: (value: string) => void;
  language: 'python' | 'json';
  /** Template paths (`ctx.score.value`), offered in Python as `ctx['score']['value']`. */
  completions?: readonly string[];
  readOnly?: boolean;
  testId?: string;
  minHeight?: number;
};

export function toPythonAccess(path: string): string {
  const parts = path
    .replace(/^ctx\.?/, '')
    .split(/\.|\[|\]/)
    .filter(Boolean)
    .map((p) => p.replace(/^'(.*)'$/, '$1'));
  return `ctx${parts.map((p) => (/^\d+$/.test(p) ? `[${p}]` : `['${p}']`)).join('')}`;
}

function ctxCompletions(paths: () => readonly string[]) {
  return (context: CompletionContext): CompletionResult | null => {
    const word = context.matchBefore(/ctx[\w[\]'"]*$/);
    if (!word || (word.from === word.to && !context.explicit)) return null;
    return {
      from: word.from,
      options: paths().map((p) => ({ label: toPythonAccess(p), detail: p, type: 'variable' })),
      validFor: /^ctx[\w[\]'"]*$/,
    };
  };
}

export function CodeEditor({ value, onChange, language, completions = [], readOnly = false, testId, minHeight = 160 }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const onChangeRef = useRef(onChange);
  const pathsRef = useRef(completions);
  const readOnlyCompartment = useRef(new Compartment());
  useEffect(() => {
    // The latest callbacks for the view's listeners, which are made once.
    onChangeRef.current = onChange;
    pathsRef.current = completions;
  });

  useEffect(() => {
    if (!host.current) return;
    const lang = language === 'python' ? [python(), autocompletion({ override: [ctxCompletions(() => pathsRef.current)] })] : [json()];
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          ...lang,
          keymap.of([]),
          EditorView.lineWrapping,
          readOnlyCompartment.current.of([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) onChangeRef.current?.(u.state.doc.toString());
          }),
          EditorView.theme({ '&': { minHeight: `${minHeight}px` }, '.cm-scroller': { minHeight: `${minHeight}px` } }),
        ],
      }),
    });
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the view lives as long as the component; value/readOnly changes are synced below
  }, [language]);

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) {
      v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
    }
  }, [value]);

  useEffect(() => {
    view.current?.dispatch({
      effects: readOnlyCompartment.current.reconfigure([EditorState.readOnly.of(readOnly), EditorView.editable.of(!readOnly)]),
    });
  }, [readOnly]);

  return <div className="code-editor" ref={host} data-testid={testId} />;
}
