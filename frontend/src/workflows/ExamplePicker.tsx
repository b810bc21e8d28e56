/** "Start from an example": the server's runnable examples; one click makes it a workflow and opens it. */
import { useEffect, useState } from 'react';
import { useNavigate } from 'react-router';

import { examples as examplesApi } from '../api/endpoints';
import type { Example } from '../api/types';
import { errorMessage, toast } from '../shared/toasts';
import './workflows.css';

/** The editor keeps a workflow's test input here (editor/hooks.ts): an example starts with its sample. */
const testInputKey = (workflowId: string) => `flowdeck.testInput.${workflowId}`;

export function ExamplePicker() {
  const navigate = useNavigate();
  const [items, setItems] = useState<Example[] | null>(null);
  const [starting, setStarting] = useState<string | null>(null);

  useEffect(() => {
    examplesApi
      .list()
      .then((page) => setItems(page.items))
      .catch(() => setItems([]));
  }, []);

  const start = async (example: Example) => {
    setStarting(example.id);
    try {
      const workflow = await examplesApi.start(example.id);
      window.localStorage.setItem(testInputKey(workflow.id), JSON.stringify(example.input ?? {}, null, 2));
      navigate(`/workflows/${workflow.id}`);
    } catch (err) {
      toast('error', `Could not start from “${example.title}”: ${errorMessage(err)}`);
      setStarting(null);
    }
  };

  if (!items || items.length === 0) return null;
  return (
    <div className="examples" data-testid="examples">
      {items.map((e) => (
        <div key={e.id} className="example-card" data-testid="example" data-id={e.id}>
          <h3>{e.title}</h3>
          <p className="muted small">{e.description}</p>
          <button type="button" className="btn btn--small" disabled={starting !== null} onClick={() => void start(e)} data-testid={`example-start-${e.id}`}>
            {starting === e.id ? 'Starting…' : 'Start from this example'}
          </button>
        </div>
      ))}
    </div>
  );
}
