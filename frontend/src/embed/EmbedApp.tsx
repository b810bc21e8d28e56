/**
 * The embed page (docs/widgets.md "The embed page"): fetch the widget's data with the token from the path, render
 * it full-size, and keep it fresh: Socket.IO `widget_join` + `widget_data` (replay: the new data after each
 * completed run), `widget_follow` for a sync run that was still running (its data arrives once it finishes),
 * and a 60 s fallback poll.
 */
import { io, type Socket } from 'socket.io-client';
import { useCallback, useEffect, useRef, useState } from 'react';

import { clockTime } from '../widgets/format';
import { EMBED_SOCKET_EVENTS, type WidgetAnswer } from '../widgets/types';
import { WidgetView } from '../widgets/WidgetView';
import { EmbedError, fetchData, fetchRun } from './api';

export const FALLBACK_REFRESH_MS = 60_000;

type Live = 'connecting' | 'joined' | 'offline';

export function EmbedApp({ token, search }: { token: string; search: string }) {
  const [answer, setAnswer] = useState<WidgetAnswer | null>(null);
  const [failure, setFailure] = useState<EmbedError | null>(null);
  const [updatedAt, setUpdatedAt] = useState<Date | null>(null);
  const [live, setLive] = useState<Live>('connecting');
  const socketRef = useRef<Socket | null>(null);
  const modeRef = useRef<string | null>(null);
  const followRef = useRef<string | null>(null);
  const seq = useRef(0);

  const show = useCallback((next: WidgetAnswer) => {
    modeRef.current = next.mode;
    setAnswer(next);
    setFailure(null);
    setUpdatedAt(new Date());
    const runId = next.status === 'running' ? next.runId : null;
    const previous = followRef.current;
    followRef.current = runId;
    if (runId && runId !== previous && socketRef.current?.connected) {
      socketRef.current.emit(EMBED_SOCKET_EVENTS.widgetFollow, { runId }, () => undefined);
    }
  }, []);

  const fail = useCallback((err: unknown) => {
    if (err instanceof DOMException && err.name === 'AbortError') return;
    setFailure(err instanceof EmbedError ? err : new EmbedError(0, String(err)));
  }, []);

  /** Fetch the widget's data (a sync widget starts a new run: only on load, never on a timer). */
  const load = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const next = await fetchData(token, search);
      if (mine === seq.current) show(next);
    } catch (err) {
      if (mine === seq.current) fail(err);
    }
  }, [token, search, show, fail]);

  /** Fetch the followed sync run once it finished (or on the fallback timer while it runs). */
  const loadRun = useCallback(
    async (runId: string) => {
      const mine = ++seq.current;
      try {
        const next = await fetchRun(token, runId);
        if (mine === seq.current && followRef.current === runId) show(next);
      } catch (err) {
        if (mine === seq.current) fail(err);
      }
    },
    [token, show, fail],
  );

  useEffect(() => {
    void load();
  }, [load]);

  useEffect(() => {
    const socket = io({
      path: '/socket.io',
      auth: { embedToken: token },
      withCredentials: false,
      transports: ['websocket', 'polling'],
    });
    socketRef.current = socket;
    socket.on('connect', () => {
      setLive('connecting');
      socket.timeout(10_000).emit(EMBED_SOCKET_EVENTS.widgetJoin, { token }, (err: Error | null, ack: { ok?: boolean } | undefined) => {
        setLive(!err && ack?.ok !== false ? 'joined' : 'offline');
      });
      const runId = followRef.current;
      if (runId) socket.emit(EMBED_SOCKET_EVENTS.widgetFollow, { runId }, () => undefined);
    });
    socket.on('disconnect', (reason) => {
      setLive('offline');
      // Closed by the server (the link was revoked, or the server stops): a replay page shows why at once.
      if (reason === 'io server disconnect' && modeRef.current !== 'sync') void load();
    });
    socket.on('connect_error', () => setLive('offline'));
    // The widget's new data (replay), or the data of the sync run this page follows, once it finished.
    socket.on(EMBED_SOCKET_EVENTS.widgetData, (msg: WidgetAnswer) => {
      const following = followRef.current;
      if (following ? msg.runId === following : modeRef.current !== 'sync') {
        seq.current++; // a fetch still under way would be older
        show(msg);
      }
    });
    return () => {
      socket.disconnect();
      socketRef.current = null;
    };
  }, [token, show, load]);

  // Fallback when the socket is down: a replay page refetches; a sync page polls the run it follows.
  useEffect(() => {
    const timer = window.setInterval(() => {
      if (followRef.current) void loadRun(followRef.current);
      else if (modeRef.current !== 'sync' || failure?.status === 0) void load();
    }, FALLBACK_REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [load, loadRun, failure]);

  const gone = failure && (failure.status === 404 || failure.status === 410 || failure.status === 401 || failure.status === 403);
  return (
    <div className="embed" data-testid="embed" data-live={live}>
      {/* The server titles the page by the widget's name. */}
      {!gone && document.title && (
        <h1 className="embed__title" data-testid="embed-title">
          {document.title}
        </h1>
      )}
      <div className="embed__body">
        {gone ? (
          <div className="embed__gone" data-testid="embed-error" data-status={failure.status}>
            <strong>{failure.status === 410 ? 'This widget is no longer available' : 'Widget not found'}</strong>
            <p>{failure.message}</p>
          </div>
        ) : answer ? (
          <WidgetView answer={answer} fill />
        ) : failure ? (
          <div className="embed__gone" data-testid="embed-error" data-status={failure.status}>
            <strong>The widget could not be loaded</strong>
            <p>{failure.message}</p>
          </div>
        ) : (
          <div className="embed__loading" data-testid="embed-loading">
            Loading…
          </div>
        )}
      </div>
      <footer className="embed__foot">
        {failure && answer && !gone && (
          <span className="embed__warn" data-testid="embed-stale" title={failure.message}>
            not refreshed: {failure.message}
          </span>
        )}
        <span className={`embed__dot embed__dot--${live}`} title={live === 'joined' ? 'live' : live} />
        <span data-testid="embed-updated">{updatedAt ? `updated ${clockTime(updatedAt)}` : ''}</span>
      </footer>
    </div>
  );
}
