import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The config runs in Node; reading the environment this way needs no @types/node.
const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
const backend = env.FLOWDECK_BACKEND ?? 'http://127.0.0.1:8000';

// The build lands in ../static, which `flowdeck serve` serves at `/` (SPEC: static/ is build output only).
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: '../static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
  },
  server: {
    proxy: {
      '/api': backend,
      '/schema': backend,
      '/socket.io': { target: backend.replace(/^http/, 'ws'), ws: true },
    },
  },
});
