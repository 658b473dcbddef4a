// Stands in for your sign-in: keeps the email in a cookie, then goes home.
import { NextResponse } from 'next/server';

export function GET(request) {
  const email = new URL(request.url).searchParams.get('email') ?? '';
  // A relative Location: the site's own origin, whatever proxy is in front.
  const response = new NextResponse(null, { status: 303, headers: { location: '/' } });
  response.cookies.set('demo_email', email, { httpOnly: true, sameSite: 'lax', path: '/' });
  return response;
}
