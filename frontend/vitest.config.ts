import { defineConfig } from 'vitest/config';

// Unit tests cover the pure modules (graph/, runs/, editor/shortcuts): no DOM needed.
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    pool: 'threads',
    maxWorkers: 2,
  },
});
