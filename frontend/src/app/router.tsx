import { lazy, Suspense, type ReactNode } from 'react';
import { createBrowserRouter, Outlet } from 'react-router';

import { LoginPage } from '../auth/LoginPage';
import { RequireSession, SessionProvider } from '../auth/session';
import { EditorPage } from '../editor/EditorPage';
import { RunDetailPage } from '../runs/RunDetailPage';
import { RunHistoryPage } from '../runs/RunHistoryPage';
import { ToastHost } from '../shared/ui/Toasts';
import { WorkflowListPage } from '../workflows/WorkflowListPage';
import { AppShell } from './AppShell';

// The widget designer (and Chart.js with it) loads on first visit only.
const WidgetDesignerPage = lazy(() => import('../widgets/designer/WidgetDesignerPage'));
// So do the data-source, query and account pages.
const DataSourcesPage = lazy(() => import('../data/DataSourcesPage').then((m) => ({ default: m.DataSourcesPage })));
const DataSourceEditPage = lazy(() => import('../data/DataSourcesPage').then((m) => ({ default: m.DataSourceEditPage })));
const QueriesPage = lazy(() => import('../data/QueriesPage').then((m) => ({ default: m.QueriesPage })));
const QueryEditPage = lazy(() => import('../data/QueriesPage').then((m) => ({ default: m.QueryEditPage })));
const AccountPage = lazy(() => import('../account/AccountPage').then((m) => ({ default: m.AccountPage })));
const ApprovalsPage = lazy(() => import('../approvals/ApprovalsPage').then((m) => ({ default: m.ApprovalsPage })));
const SettingsPage = lazy(() => import('../settings/SettingsPage').then((m) => ({ default: m.SettingsPage })));

function Lazy({ children }: { children: ReactNode }) {
  return <Suspense fallback={<div className="page">Loading…</div>}>{children}</Suspense>;
}

function Root() {
  return (
    <SessionProvider>
      <Outlet />
      <ToastHost />
    </SessionProvider>
  );
}

function NotFound() {
  return <div className="page page--center">This page does not exist.</div>;
}

export const router = createBrowserRouter([
  {
    element: <Root />,
    children: [
      { path: '/login', element: <LoginPage /> },
      {
        element: <RequireSession />,
        children: [
          {
            element: <AppShell />,
            children: [
              { path: '/', element: <WorkflowListPage /> },
              { path: '/workflows/:workflowId', element: <EditorPage /> },
              { path: '/workflows/:workflowId/versions/:version', element: <EditorPage /> },
              {
                path: '/workflows/:workflowId/widgets',
                element: (
                  <Suspense fallback={<div className="page">Loading…</div>}>
                    <WidgetDesignerPage />
                  </Suspense>
                ),
              },
              { path: '/runs', element: <RunHistoryPage /> },
              { path: '/runs/:runId', element: <RunDetailPage /> },
              { path: '/data-sources', element: <Lazy><DataSourcesPage /></Lazy> },
              { path: '/data-sources/new', element: <Lazy><DataSourceEditPage /></Lazy> },
              { path: '/data-sources/:sourceId', element: <Lazy><DataSourceEditPage /></Lazy> },
              { path: '/queries', element: <Lazy><QueriesPage /></Lazy> },
              { path: '/queries/new', element: <Lazy><QueryEditPage /></Lazy> },
              { path: '/queries/:queryId', element: <Lazy><QueryEditPage /></Lazy> },
              { path: '/account', element: <Lazy><AccountPage /></Lazy> },
              { path: '/settings', element: <Lazy><SettingsPage /></Lazy> },
              { path: '/approvals', element: <Lazy><ApprovalsPage /></Lazy> },
              { path: '/approvals/:approvalId', element: <Lazy><ApprovalsPage /></Lazy> },
              { path: '*', element: <NotFound /> },
            ],
          },
        ],
      },
    ],
  },
]);
