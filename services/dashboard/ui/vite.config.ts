import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * The dashboard's single-page app. `pnpm --filter @tollgate/dashboard build:ui` writes ui/dist, which
 * the dashboard service serves as static files. `dev:ui` runs Vite's dev server with /api proxied to
 * a dashboard on DASHBOARD_URL (default: the `make dev` one).
 */
export default defineConfig({
  root,
  plugins: [react()],
  // Pages are loaded on demand (React.lazy in App.tsx): the first page needs React, TanStack Query
  // and its own chunk; the charts library comes only with the pages that draw charts.
  build: { outDir: 'dist', emptyOutDir: true, chunkSizeWarningLimit: 400 },
  server: {
    proxy: { '/api': process.env.DASHBOARD_URL ?? 'http://127.0.0.1:8083' },
  },
});
