/** CodeMirror 6 in React: Python (with ctx completions) or JSON; the view is created once per mount. */
import { acceptCompletion, autocompletion } from '@codemirror/autocomplete';
import { json } from '@codemirror/lang-json';
import { python } from '@codemirror/lang-python';
import { syntaxHighlighting } from '@codemirror/language';
import { Compartment, EditorState, Prec } from '@codemirror/state';
import { EditorView, keymap, tooltips } from '@codemirror/view';
import { classHighlighter } from '@lezer/highlight';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';

import { ctxCompletionSource } from './ctxCompletion';
import './code-editor.css';

type Props = {
  value: string;
  onChange?: (value: string) => void;
  language: 'python' | 'json';
  /** Template paths (`ctx.score.value`), offered in Python as `ctx['score']['value']`. */
  completions?: readonly string[];
  readOnly?: boolean;
  testId?: string;
  minHeight?: number;
  /** What screen readers call the editor (default: "Python code" / "JSON"). */
  ariaLabel?: string;
};

/**
 * Completion opens on `ctx`, `ctx.` and `ctx['…`, with nothing selected: Enter types a newline unless the
 * user moved to an option (↓/↑), and Tab or Enter then accept it. The popup lives in <body>, so panels that
 * clip their content cannot cut it, and CodeMirror keeps it inside the viewport (shifted or flipped).
 */
export function completionExtensions(paths: () => readonly string[]) {
  return [
    autocompletion({ override: [ctxCompletionSource(paths)], selectOnOpen: false, icons: false }),
    tooltips({ parent: document.body }),
    Prec.highest(keymap.of([{ key: 'Tab', run: acceptCompletion }])),
  ];
}

export function CodeEditor({ value, onChange, language, completions = [], readOnly = false, testId, minHeight = 160, ariaLabel }: Props) {
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
    const lang = language === 'python' ? [python(), ...completionExtensions(() => pathsRef.current)] : [json()];
    const v = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          basicSetup,
          // Token classes (tok-*) coloured by code-editor.css for each theme, with enough contrast on both.
          syntaxHighlighting(classHighlighter),
          EditorView.contentAttributes.of({ 'aria-label': ariaLabel ?? (language === 'python' ? 'Python code' : 'JSON') }),
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
