// @vitest-environment happy-dom
import { completionStatus, currentCompletions, CompletionContext, moveCompletionSelection, startCompletion } from '@codemirror/autocomplete';
import { python } from '@codemirror/lang-python';
import { EditorState } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { afterEach, describe, expect, it } from 'vitest';

import { completionExtensions } from './CodeEditor';
import { ctxCompletionSource, ctxOptions, parseTyped, toPythonAccess } from './ctxCompletion';

const PATHS = ['ctx.input', 'ctx.input.items', 'ctx.score', 'ctx.score.value', 'ctx.loop', 'ctx.loop.item', "ctx.input['odd key']"];

function complete(doc: string) {
  const state = EditorState.create({ doc, selection: { anchor: doc.length } });
  return ctxCompletionSource(() => PATHS)(new CompletionContext(state, doc.length, false));
}

const labels = (doc: string) => (complete(doc)?.options ?? []).map((o) => o.label);

describe('ctx completion (python)', () => {
  it('writes paths the way Python reads them', () => {
    expect(toPythonAccess('ctx.score.tags[0]')).toBe("ctx['score']['tags'][0]");
    expect(toPythonAccess("ctx.input['odd key']")).toBe("ctx['input']['odd key']");
  });

  it('parses what is typed after ctx', () => {
    expect(parseTyped('ctx.')).toEqual({ done: [], partial: '' });
    expect(parseTyped("ctx['score'][")).toEqual({ done: ['score'], partial: '' });
    expect(parseTyped("ctx['sc")).toEqual({ done: [], partial: 'sc' });
    expect(parseTyped('ctx.score.va')).toEqual({ done: ['score'], partial: 'va' });
  });

  it('opens on `ctx.` with every top-level name first, replacing the whole fragment', () => {
    const result = complete('x = ctx.');
    expect(result?.from).toBe(4);
    expect(result?.options.slice(0, 3).map((o) => o.label)).toEqual(["ctx['input']", "ctx['score']", "ctx['loop']"]);
    expect(labels('x = ctx.')).toContain("ctx['loop']['item']");
  });

  it('narrows by the name being typed, in either spelling', () => {
    expect(labels('ctx.sc')).toEqual(["ctx['score']", "ctx['score']['value']"]);
    expect(labels("ctx['score']['")).toEqual(["ctx['score']['value']"]);
    expect(labels("ctx['input'][")).toEqual(["ctx['input']['items']", "ctx['input']['odd key']"]);
  });

  it('closes after a complete match with nothing longer to offer, and ignores other names ending in ctx', () => {
    expect(complete("ctx['score']['value']")).toBeNull();
    expect(labels("ctx['score']")).toEqual(["ctx['score']['value']"]);
    expect(complete('myctx.')).toBeNull();
    expect(complete('obj.ctx.')).toBeNull();
    expect(ctxOptions(PATHS, 'ctx.nothing')).toEqual([]);
  });

  it('replaces the brackets the editor closed while typing', () => {
    const doc = "y = ctx['sc']";
    const state = EditorState.create({ doc, selection: { anchor: doc.length - 2 } });
    const result = ctxCompletionSource(() => PATHS)(new CompletionContext(state, doc.length - 2, false));
    expect(result?.from).toBe(4);
    expect(result?.to).toBe(doc.length);
  });
});

describe('the code editor with completion', () => {
  let view: EditorView | null = null;
  afterEach(() => {
    view?.destroy();
    view = null;
  });

  /** The extensions CodeEditor uses for python (basicSetup brings the keymap with Enter → newline). */
  function editor(doc: string): EditorView {
    view = new EditorView({
      parent: document.body.appendChild(document.createElement('div')),
      state: EditorState.create({ doc, selection: { anchor: doc.length }, extensions: [basicSetup, python(), ...completionExtensions(() => PATHS)] }),
    });
    return view;
  }

  async function openCompletion(v: EditorView) {
    startCompletion(v);
    for (let i = 0; i < 50 && completionStatus(v.state) !== 'active'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(completionStatus(v.state)).toBe('active');
  }

  function pressEnter(v: EditorView) {
    v.contentDOM.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', keyCode: 13, bubbles: true, cancelable: true }));
  }

  it('Enter types a newline while no completion was chosen', async () => {
    const v = editor('x = ctx.');
    await openCompletion(v);
    expect(currentCompletions(v.state).length).toBeGreaterThan(0);
    pressEnter(v);
    expect(v.state.doc.lines).toBe(2);
    expect(v.state.doc.line(1).text).toBe('x = ctx.');
  });

  it('Enter takes the completion the user moved to', async () => {
    const v = editor('x = ctx.sc');
    await openCompletion(v);
    await new Promise((r) => setTimeout(r, 80)); // CodeMirror ignores Enter for 75 ms after the list opens
    moveCompletionSelection(true)(v);
    pressEnter(v);
    expect(v.state.doc.toString()).toBe("x = ctx['score']");
  });
});
