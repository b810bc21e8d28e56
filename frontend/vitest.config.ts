import { defineConfig } from 'vitest/config';

// Unit tests cover the pure modules (graph/, runs/, editor/shortcuts) in Node: no DOM needed.
// Component tests (*.test.tsx) render with @testing-library/react in happy-dom: each such file starts
// with the docblock `// @vitest-environment happy-dom`.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
    environment: 'node',
    pool: 'threads',
    maxWorkers: 2,
  },
});
