// Compile-time and run-time checks of provider request bodies.
//
// TypeScript's excess property check covers an object literal only: a field that reaches a body
// through a spread (`{ ...base, … }`, `...(end ? { … } : {})`) or a variable is never checked against
// the provider's type, so a misspelled name there would go out unnoticed (the provider ignores it or
// refuses the call). `exact<T>()(body)` closes that: the body must be a T, and no field of it, at any
// depth and however it got there, may be one T lacks. test/types/provider-bodies.ts shows it biting.
//
// Values from the catalog or the request (aspect ratio, resolution, duration) are strings in our
// types; `oneOf` narrows one to the provider's enum at run time, failing the job with a clear message
// when the value is outside it, instead of casting it with `as`.
import { ProviderError } from './types.js';

type AllKeys<T> = T extends unknown ? keyof T : never;
type ValueAt<T, K> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;
type ObjectMembers<T> = T extends readonly unknown[] ? never : T extends object ? T : never;
type ArrayItems<T> = T extends readonly (infer I)[] ? I : never;

/**
 * The field names of `Body`, nested objects and array items included, that `Provider` lacks (never
 * when none). Where `Provider` is a union, a field is extra when no member has it.
 */
export type ExtraKeys<Body, Provider> = Body extends readonly (infer I)[]
  ? ExtraKeys<I, ArrayItems<Provider>>
  : Body extends object
    ? {
        [K in keyof Body]-?: K extends AllKeys<ObjectMembers<Provider>> ? ExtraKeys<NonNullable<Body[K]>, NonNullable<ValueAt<ObjectMembers<Provider>, K>>> : K;
      }[keyof Body]
    : never;

/** `unknown` when `Body` has no field `Provider` lacks; otherwise a type naming the extra fields, which no body matches. */
type NoExtraKeys<Body, Provider> = [ExtraKeys<Body, Provider>] extends [never] ? unknown : { 'fields the provider type lacks': ExtraKeys<Body, Provider> };

/**
 * The body, checked: it must be a `T` (values included) and have no field `T` lacks, at any depth.
 * Written `exact<T>()(body)` so that `T` is given and the body's own type is inferred.
 */
export function exact<T>() {
  return <B extends T>(body: B & NoExtraKeys<B, T>): T => body;
}

/** The members of a string union, as a list: the compiler refuses a list that misses a member or adds one. */
export function allOf<T extends string>() {
  return <const L extends readonly T[]>(list: L & ([Exclude<T, L[number]>] extends [never] ? unknown : { missing: Exclude<T, L[number]> })): L => list;
}

/**
 * `value` narrowed to one of `allowed` (the provider's enum for `field`), or a final ProviderError
 * saying which value the route cannot send: a request outside the catalog's values is refused at
 * create time, so this fires only when the catalog and the provider's enum disagree.
 */
export function oneOf<const L extends readonly (string | number)[]>(
  provider: string,
  field: string,
  allowed: L,
  value: string | number | undefined,
): L[number] {
  if (value !== undefined && (allowed as readonly (string | number)[]).includes(value)) return value as L[number];
  throw new ProviderError(`${provider}: ${field} ${JSON.stringify(value ?? null)} is not one this route can send (it takes ${allowed.join(', ')})`, {
    retryable: false,
  });
}
