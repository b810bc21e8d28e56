import react from '@vitejs/plugin-react';
import { defineConfig } from 'vitest/config';

// Unit tests cover the pure modules (graph/, runs/, editor/shortcuts) in Node, no DOM. Component tests
// (`*.test.tsx`: inspector forms, data pages) start with `// @vitest-environment happy-dom` and render
// with @testing-library/react.
export default defineConfig({
  plugins: [react()],
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
    environment: 'node',
    pool: 'threads',
    maxWorkers: 2,
  },
});
