/** Under the test input: its JSON checked as you type, the first error with its line and column. */
import { useDeferredValue, useMemo } from 'react';

import { jsonProblem } from '../graph/jsonCheck';

export function TestInputCheck({ text }: { text: string }) {
  const deferred = useDeferredValue(text);
  const problem = useMemo(() => jsonProblem(deferred), [deferred]);
  if (problem) {
    return (
      <div className="field__error" role="alert" data-testid="test-input-error" data-line={problem.line} data-column={problem.column}>
        Line {problem.line}, column {problem.column}: {problem.message}
      </div>
    );
  }
  return (
    <div className="field__ok small" data-testid="test-input-ok">
      ✓ Valid JSON
    </div>
  );
}
