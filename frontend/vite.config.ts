import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The config runs in Node; reading the environment this way needs no @types/node.
const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
const backend = env.FLOWDECK_BACKEND ?? 'http://127.0.0.1:8000';

// The build lands in ../static, which `flowdeck serve` serves at `/` (SPEC: static/ is build output only).
// Two pages: the editor (index.html) and the embed page (embed.html, served at /embed/<token>), which
// must stay free of the editor, React Flow and CodeMirror (docs/widgets.md).
const page = (name: string) => new URL(name, import.meta.url).pathname;

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: '../static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    rolldownOptions: {
      input: { main: page('index.html'), embed: page('embed.html') },
    },
  },
  server: {
    proxy: {
      '/api': backend,
      '/schema': backend,
      // /embed/<token>/data and /runs/<id> come from the backend; the page itself too (it sets the CSP).
      '/embed': backend,
      '/socket.io': { target: backend.replace(/^http/, 'ws'), ws: true },
    },
  },
});
