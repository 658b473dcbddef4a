// The runtime module `cloudflare:workers`, typed from @cloudflare/workers-types' importable
// variant (its global variant would replace Node's and the DOM's globals for the whole project).
declare module 'cloudflare:workers' {
  import type { CloudflareWorkersModule } from '@cloudflare/workers-types/index.ts';
  export const DurableObject: typeof CloudflareWorkersModule.DurableObject;
}
