import { lazy, Suspense } from 'react';
import { createBrowserRouter, Outlet } from 'react-router';

import { AccountPage } from '../account/AccountPage';
import { LoginPage } from '../auth/LoginPage';
import { RequireSession, SessionProvider } from '../auth/session';
import { DataSourceEditPage, DataSourcesPage } from '../data/DataSourcesPage';
import { QueriesPage, QueryEditPage } from '../data/QueriesPage';
import { EditorPage } from '../editor/EditorPage';
import { RunDetailPage } from '../runs/RunDetailPage';
import { RunHistoryPage } from '../runs/RunHistoryPage';
import { ToastHost } from '../shared/ui/Toasts';
import { WorkflowListPage } from '../workflows/WorkflowListPage';
import { AppShell } from './AppShell';

// The widget designer (and Chart.js with it) loads on first visit only.
const WidgetDesignerPage = lazy(() => import('../widgets/designer/WidgetDesignerPage'));

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
              { path: '/data-sources', element: <DataSourcesPage /> },
              { path: '/data-sources/new', element: <DataSourceEditPage /> },
              { path: '/data-sources/:sourceId', element: <DataSourceEditPage /> },
              { path: '/queries', element: <QueriesPage /> },
              { path: '/queries/new', element: <QueryEditPage /> },
              { path: '/queries/:queryId', element: <QueryEditPage /> },
              { path: '/account', element: <AccountPage /> },
              { path: '*', element: <NotFound /> },
            ],
          },
        ],
      },
    ],
  },
]);
