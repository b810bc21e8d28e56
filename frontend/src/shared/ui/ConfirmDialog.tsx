/**
 * An in-app confirmation (instead of the browser's `confirm()`, which blocks the page, cannot be styled and
 * reads "This page says"): `const [ask, dialog] = useConfirm()`, render `dialog`, then `if (await ask({...}))`.
 */
import { useCallback, useRef, useState, type ReactNode } from 'react';

import { Modal } from './Modal';

export type ConfirmOptions = {
  title: string;
  message: ReactNode;
  /** The label of the button that goes ahead, e.g. "Revoke". */
  confirmLabel: string;
  danger?: boolean;
};

type Pending = ConfirmOptions & { resolve: (ok: boolean) => void };

export function useConfirm(): [(options: ConfirmOptions) => Promise<boolean>, ReactNode] {
  const [pending, setPending] = useState<Pending | null>(null);
  const current = useRef<Pending | null>(null);
  const ask = useCallback(
    (options: ConfirmOptions) =>
      new Promise<boolean>((resolve) => {
        current.current?.resolve(false);
        const next = { ...options, resolve };
        current.current = next;
        setPending(next);
      }),
    [],
  );
  const answer = useCallback((ok: boolean) => {
    current.current?.resolve(ok);
    current.current = null;
    setPending(null);
  }, []);
  const cancel = useCallback(() => answer(false), [answer]);
  const dialog = pending ? (
    <Modal
      title={pending.title}
      onClose={cancel}
      testId="confirm-dialog"
      footer={
        <>
          <button type="button" className="btn btn--ghost" onClick={cancel} data-testid="confirm-cancel">
            Cancel
          </button>
          <button
            type="button"
            className={`btn ${pending.danger ? 'btn--danger' : 'btn--primary'}`}
            onClick={() => answer(true)}
            autoFocus
            data-testid="confirm-ok"
          >
            {pending.confirmLabel}
          </button>
        </>
      }
    >
      <p>{pending.message}</p>
    </Modal>
  ) : null;
  return [ask, dialog];
}
