/**
 * Checks JSON as it is typed: the first error with its line and column (1-based), or null. Pure.
 * JSON.parse decides (it is what Test run uses); where the engine's message carries no position (older V8
 * says only "Unexpected token"), jsonc-parser (VS Code's JSON scanner) locates the error.
 */
import { parse, type ParseError } from 'jsonc-parser';

export type JsonProblem = { message: string; line: number; column: number };

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines[lines.length - 1]?.length ?? 0) + 1 };
}

function locate(text: string): number {
  const errors: ParseError[] = [];
  parse(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  return errors[0]?.offset ?? text.length;
}

export function jsonProblem(text: string): JsonProblem | null {
  if (text.trim() === '') return { message: 'Empty: write a JSON value, e.g. {}', line: 1, column: 1 };
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    const raw = err instanceof Error ? err.message : String(err);
    // V8 says "… in JSON at position 12 (line 2 column 5)" or "Unexpected end of JSON input".
    const at = /line (\d+) column (\d+)/.exec(raw);
    const position = /at position (\d+)/.exec(raw);
    const where = at
      ? { line: Number(at[1]), column: Number(at[2]) }
      : lineAndColumn(text, position ? Number(position[1]) : locate(text));
    const message = raw
      .replace(/\s*\(line \d+ column \d+\)/, '')
      .replace(/\s*in JSON at position \d+/, '')
      .replace(/, ".*" is not valid JSON$/s, '');
    return { message, ...where };
  }
}
