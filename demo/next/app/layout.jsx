import { userHashFor } from 'cdp-edge/next/server';
import { CdpProvider } from 'cdp-edge/react';
import { cookies } from 'next/headers';
import { Tracking } from './tracking';

export const metadata = { title: 'cdp-edge on Next.js' };

export default async function RootLayout({ children }) {
  // Your session here; the demo keeps the signed-in email in a cookie (see app/signin/route.js).
  const email = (await cookies()).get('demo_email')?.value;
  const user = email ? { 'str::email': email } : null;
  const userHash = user && (await userHashFor(user));
  return (
    <html lang="en">
      <body>
        <CdpProvider relay="/t" siteKey={process.env.NEXT_PUBLIC_CDP_SITE_KEY ?? 'pk_demo'}>
          <Tracking user={user} userHash={userHash} />
          {children}
        </CdpProvider>
      </body>
    </html>
  );
}
