/** Toast messages: a tiny global store any module may push to. */
import { create } from 'zustand';

export type ToastTone = 'info' | 'success' | 'error' | 'warning';
export type Toast = { id: number; tone: ToastTone; message: string; action?: { label: string; run: () => void } };

type ToastState = { toasts: Toast[]; push(toast: Omit<Toast, 'id'>, ms?: number): void; dismiss(id: number): void };

let nextId = 1;

export const useToasts = create<ToastState>()((set, get) => ({
  toasts: [],
  push(toast, ms = 5000) {
    const id = nextId++;
    set((s) => ({ toasts: [...s.toasts.slice(-4), { ...toast, id }] }));
    window.setTimeout(() => get().dismiss(id), ms);
  },
  dismiss(id) {
    set((s) => ({ toasts: s.toasts.filter((t) => t.id !== id) }));
  },
}));

export function toast(tone: ToastTone, message: string, action?: Toast['action']): void {
  useToasts.getState().push(action ? { tone, message, action } : { tone, message }, tone === 'error' ? 8000 : 5000);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
