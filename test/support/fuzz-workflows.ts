// The workflows of a contract-fuzz run (test/e2e/contract-fuzz.test.ts): upload-from-url for real,
// and every job workflow as a stand-in that only waits for its cancel, so a job the fuzzer creates
// never fetches an input, calls a provider or delivers a webhook.
import { condition } from '@temporalio/workflow';

export { uploadFromUrl } from '../../workflows/upload-from-url.js';

async function waitForCancel(): Promise<void> {
  await condition(() => false);
}

export const imageGeneration = waitForCancel;
export const videoGeneration = waitForCancel;
export const replaceActorGeneration = waitForCancel;
export const talkingActorGeneration = waitForCancel;
