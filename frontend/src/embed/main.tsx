/** Entry of the embed page (embed.html): the widget renderers and socket.io-client only, no editor. */
import './embed.css';

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';

import { tokenFromPath } from './api';
import { EmbedApp } from './EmbedApp';

const root = document.getElementById('root');
if (!root) throw new Error('no #root element');
const token = tokenFromPath(window.location.pathname);
createRoot(root).render(
  <StrictMode>
    {token ? (
      <EmbedApp token={token} search={window.location.search} />
    ) : (
      <div className="embed__gone" data-testid="embed-error" data-status="404">
        <strong>Widget not found</strong>
        <p>The address has no embed token.</p>
      </div>
    )}
  </StrictMode>,
);
