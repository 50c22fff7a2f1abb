// ESLint (flat config) with typescript-eslint. The rule set, and why:
// - @eslint/js and typescript-eslint "recommended": the correctness rules, no style
//   (formatting is not linted).
// - Type-aware promise rules: a floating promise on the server is an unhandled rejection
//   (a crash or a lost error), a promise passed where a void callback is expected is an
//   error nobody awaits, awaiting a non-promise is a mistake.
// - The house's import boundaries (../shared/DESIGN.md): crypto imports nothing of ours,
//   storage imports crypto types only and never the server, the UI never imports the
//   backend, nothing but tests imports bench/ or test/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const noImport = (group, message) => ['error', { patterns: [{ group, message }] }];

export default tseslint.config(
  { ignores: ['dist/**', 'ui/dist/**', 'node_modules/**', 'test-artifacts/**', 'coverage/**', '.tap/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Test doubles and JSON answers are typed loosely on purpose; production code is
      // reviewed for it (warn, not error).
      '@typescript-eslint/no-explicit-any': 'warn',
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Input validation matches control characters on purpose (names, messages, headers).
      'no-control-regex': 'off',
      // A server callback may name the object it belongs to before it is built.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // tap tracks every subtest it is handed: `t.test(...)` needs no await.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-floating-promises': 'off' },
  },
  {
    files: ['crypto/**/*.ts'],
    rules: { 'no-restricted-imports': noImport(['**/server/**', '**/storage/**', '**/ui/**', '**/bench/**', '**/test/**'], 'crypto/ imports only node built-ins, piscina, argon2 and pkcs11js') },
  },
  {
    files: ['storage/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/server/**', '**/ui/**', '**/bench/**', '**/test/**'], message: 'storage/ never imports the server' },
            { group: ['**/crypto/**'], allowTypeImports: true, message: 'storage/ imports crypto types only' },
          ],
        },
      ],
    },
  },
  {
    files: ['server/**/*.ts'],
    rules: { 'no-restricted-imports': noImport(['**/ui/src/**', '**/bench/**', '**/test/**'], 'server/ imports crypto and storage, never the UI, benchmarks or tests') },
  },
  {
    files: ['ui/**/*.ts', 'ui/**/*.tsx'],
    rules: { 'no-restricted-imports': noImport(['**/server/**', '**/storage/**', '**/crypto/**', '**/bench/**'], 'the UI talks HTTP: it imports nothing of the backend') },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: { process: 'readonly', console: 'readonly', require: 'readonly', URL: 'readonly', Buffer: 'readonly' } },
  },
);
