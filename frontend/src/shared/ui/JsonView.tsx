import { formatJson } from '../format';

export function JsonView({ value, testId, empty = 'nothing' }: { value: unknown; testId?: string; empty?: string }) {
  if (value === undefined || value === null) {
    return (
      <pre className="json json--empty" data-testid={testId}>
        {value === null ? 'null' : empty}
      </pre>
    );
  }
  return (
    <pre className="json" data-testid={testId}>
      {formatJson(value)}
    </pre>
  );
}
