/** An output too large to show: its size, the start of its JSON and a link that opens it in full. */
import type { OutputTruncatedOut } from '../../generated/api';
import { formatBytes } from '../format';

export function TruncatedOutput({ truncated, testId }: { truncated: OutputTruncatedOut; testId: string }) {
  return (
    <div className="truncated-output" data-testid={testId}>
      <p className="muted small">
        Too large to show here: <span data-testid={`${testId}-size`}>{truncated.bytes.toLocaleString('en')} bytes</span> ({formatBytes(truncated.bytes)}).{' '}
        <a href={truncated.href} target="_blank" rel="noreferrer" data-testid={`${testId}-link`}>
          Open the full output
        </a>
      </p>
      <pre className="logs">{truncated.preview}…</pre>
    </div>
  );
}
