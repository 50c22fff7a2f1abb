// The admin UI's build: Solid + Vite, output in ui/dist, served by the service
// (server/http/static.ts) under a strict Content-Security-Policy: no inline script
// or style may appear in the output.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';
import solid from 'vite-plugin-solid';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [solid()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill is an inline script; every browser this targets has modulepreload.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URLs into CSS/JS (fonts would break font-src 'self').
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // `npx vite` in ui/ during development: the API on the service's port.
    proxy: { '/api': 'http://127.0.0.1:8080' },
  },
});
