// ESLint (flat config): typescript-eslint's recommended rules and the React hooks rules (`npm run lint`, `make frontend-lint`).
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist', 'src/generated'] },
  {
    files: ['**/*.{ts,tsx}'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended, reactHooks.configs.flat.recommended],
    languageOptions: { globals: globals.browser },
    rules: {
      // Unused names are already errors of tsc (noUnusedLocals / noUnusedParameters).
      '@typescript-eslint/no-unused-vars': 'off',
      // Flags every load-on-change effect (clear, then fetch) of the pages; moving those to a data library is its own change.
      'react-hooks/set-state-in-effect': 'off',
    },
  },
);
