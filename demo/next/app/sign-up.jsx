'use client';
import { useTracker } from 'cdp-edge/react';

export function SignUp() {
  const cdp = useTracker();
  return (
    <button type="button" onClick={() => cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro' })}>
      Sign up
    </button>
  );
}
