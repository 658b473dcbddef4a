import Link from 'next/link';
import { SignUp } from './sign-up';

export default function Home() {
  return (
    <main>
      <h1>Home</h1>
      <p>
        <Link href="/about">About</Link> · <a href="/signin?email=ann@example.com">Sign in as ann@example.com</a>
      </p>
      <SignUp />
    </main>
  );
}
