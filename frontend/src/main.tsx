import '@xyflow/react/dist/style.css';
import './styles.css';
import './theme.css';
import './editor/editor-extras.css';

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';

import { router } from './app/router';
import { applyTheme } from './shared/theme';

applyTheme();

const root = document.getElementById('root');
if (!root) throw new Error('no #root element');
createRoot(root).render(
  <StrictMode>
    <RouterProvider router={router} />
  </StrictMode>,
);
