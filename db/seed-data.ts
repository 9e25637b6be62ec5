// The catalog every workspace sees: voices and actors with stable ids, so seeding is an
// idempotent upsert. Media (reference image, preview video, thumbnail, voice preview) is rendered
// offline by admin/seed.ts and served by the gateway under /media/catalog/...
//
// Allowed values (the spec leaves them open; GET /v1/actors returns exactly these labels):
//   age        young_adult (18–29) · adult (30–44) · middle_aged (45–64) · senior (65+)
//   gender     female · male · non_binary
//   skin_tone  light · medium_light · medium · medium_dark · dark   (a five-step scale)
// Voices use the same gender labels; `language` is a BCP 47 tag, `accent` a readable label.

export const actorAges = ['young_adult', 'adult', 'middle_aged', 'senior'] as const;
export const actorGenders = ['female', 'male', 'non_binary'] as const;
export const actorSkinTones = ['light', 'medium_light', 'medium', 'medium_dark', 'dark'] as const;

type ActorAge = (typeof actorAges)[number];
type ActorGender = (typeof actorGenders)[number];
type ActorSkinTone = (typeof actorSkinTones)[number];

export interface SeedVoice {
  id: string;
  name: string;
  gender: ActorGender;
  language: string;
  accent: string;
  /** espeak-ng voice and variant (`<language>+<variant>`) used by the local renderer. */
  ttsVoice: string;
  /** ElevenLabs premade voice id used when the talking-actor route is live; null = local only. */
  providerVoiceId: string | null;
  /** The line spoken in the voice's preview clip. */
  sample: string;
}

export interface SeedActor {
  id: string;
  name: string;
  age: ActorAge;
  gender: ActorGender;
  skinTone: ActorSkinTone;
  isPro: boolean;
  defaultVoiceId: string | null;
  /** What the offline renderer draws for the reference image and preview (seeded by the id). */
  look: string;
}

export const seedVoices: readonly SeedVoice[] = [
  {
    id: 'voice_rachel_en_us',
    name: 'Rachel',
    gender: 'female',
    language: 'en-US',
    accent: 'American',
    ttsVoice: 'en-us+f3',
    providerVoiceId: '21m00Tcm4TlvDq8ikWAM',
    sample: 'Hi, I am Rachel. Calm, clear and ready to narrate your story.',
  },
  {
    id: 'voice_adam_en_us',
    name: 'Adam',
    gender: 'male',
    language: 'en-US',
    accent: 'American',
    ttsVoice: 'en-us+m3',
    providerVoiceId: 'pNInz6obpgDQGcFmaJgB',
    sample: 'Hello, I am Adam. A deep, steady voice for product walkthroughs.',
  },
  {
    id: 'voice_bella_en_us',
    name: 'Bella',
    gender: 'female',
    language: 'en-US',
    accent: 'American',
    ttsVoice: 'en-us+f2',
    providerVoiceId: 'EXAVITQu4vr4xnSDxMaL',
    sample: 'Hey there, I am Bella. Bright and friendly, made for social ads.',
  },
  {
    id: 'voice_josh_en_us',
    name: 'Josh',
    gender: 'male',
    language: 'en-US',
    accent: 'American',
    ttsVoice: 'en-us+m7',
    providerVoiceId: 'TxGEqnHWrfWFTfGW9XjX',
    sample: 'What is up, I am Josh. Energetic reads for quick explainers.',
  },
  {
    id: 'voice_charlotte_en_gb',
    name: 'Charlotte',
    gender: 'female',
    language: 'en-GB',
    accent: 'British',
    ttsVoice: 'en-gb+f4',
    providerVoiceId: 'XB0fDUnXU5powFXDhCwa',
    sample: 'Good afternoon, I am Charlotte. Warm British tones for your brand.',
  },
  {
    id: 'voice_george_en_gb',
    name: 'George',
    gender: 'male',
    language: 'en-GB',
    accent: 'British',
    ttsVoice: 'en-gb+m3',
    providerVoiceId: 'JBFqnCBsd6RMkjVDRZzb',
    sample: 'Good day, I am George. A seasoned voice for documentaries.',
  },
  {
    id: 'voice_fiona_en_scotland',
    name: 'Fiona',
    gender: 'female',
    language: 'en-GB',
    accent: 'Scottish',
    ttsVoice: 'en-gb-scotland+f1',
    providerVoiceId: null,
    sample: 'Hello, I am Fiona, with a lilt from the Highlands.',
  },
  {
    id: 'voice_marcus_en_caribbean',
    name: 'Marcus',
    gender: 'male',
    language: 'en-029',
    accent: 'Caribbean',
    ttsVoice: 'en-029+m2',
    providerVoiceId: null,
    sample: 'Hi, I am Marcus. Relaxed and easygoing, like a sunny afternoon.',
  },
  {
    id: 'voice_river_en_us',
    name: 'River',
    gender: 'non_binary',
    language: 'en-US',
    accent: 'American',
    ttsVoice: 'en-us+f5',
    providerVoiceId: null,
    sample: 'Hi, I am River. A neutral, modern voice for tutorials.',
  },
  {
    id: 'voice_camille_fr',
    name: 'Camille',
    gender: 'female',
    language: 'fr-FR',
    accent: 'Parisian French',
    ttsVoice: 'fr+f2',
    providerVoiceId: null,
    sample: 'Bonjour, je suis Camille. Une voix douce pour vos vidéos.',
  },
  {
    id: 'voice_mateo_es',
    name: 'Mateo',
    gender: 'male',
    language: 'es-419',
    accent: 'Latin American Spanish',
    ttsVoice: 'es-419+m4',
    providerVoiceId: null,
    sample: 'Hola, soy Mateo. Una voz cálida para tus anuncios.',
  },
  {
    id: 'voice_lena_de',
    name: 'Lena',
    gender: 'female',
    language: 'de-DE',
    accent: 'German',
    ttsVoice: 'de+f3',
    providerVoiceId: null,
    sample: 'Hallo, ich bin Lena. Klar und freundlich für Ihre Präsentationen.',
  },
];

export const seedActors: readonly SeedActor[] = [
  {
    id: 'actor_maya_chen',
    name: 'Maya Chen',
    age: 'young_adult',
    gender: 'female',
    skinTone: 'light',
    isPro: false,
    defaultVoiceId: 'voice_bella_en_us',
    look: 'young woman with a black bob haircut, denim jacket, sunny cafe background',
  },
  {
    id: 'actor_james_okafor',
    name: 'James Okafor',
    age: 'adult',
    gender: 'male',
    skinTone: 'dark',
    isPro: true,
    defaultVoiceId: 'voice_adam_en_us',
    look: 'man in a navy suit, short hair, modern office background',
  },
  {
    id: 'actor_sofia_martinez',
    name: 'Sofia Martínez',
    age: 'adult',
    gender: 'female',
    skinTone: 'medium',
    isPro: true,
    defaultVoiceId: 'voice_mateo_es',
    look: 'woman with long wavy brown hair, white blouse, bright studio background',
  },
  {
    id: 'actor_arjun_patel',
    name: 'Arjun Patel',
    age: 'young_adult',
    gender: 'male',
    skinTone: 'medium_dark',
    isPro: false,
    defaultVoiceId: 'voice_josh_en_us',
    look: 'young man with a beard, green hoodie, loft apartment background',
  },
  {
    id: 'actor_eleanor_whitfield',
    name: 'Eleanor Whitfield',
    age: 'senior',
    gender: 'female',
    skinTone: 'light',
    isPro: true,
    defaultVoiceId: 'voice_charlotte_en_gb',
    look: 'older woman with silver hair, pearl necklace, library background',
  },
  {
    id: 'actor_kenji_watanabe',
    name: 'Kenji Watanabe',
    age: 'middle_aged',
    gender: 'male',
    skinTone: 'medium_light',
    isPro: false,
    defaultVoiceId: null,
    look: 'man with glasses and a grey cardigan, home office background',
  },
  {
    id: 'actor_amara_nwosu',
    name: 'Amara Nwosu',
    age: 'young_adult',
    gender: 'female',
    skinTone: 'dark',
    isPro: true,
    defaultVoiceId: 'voice_rachel_en_us',
    look: 'woman with braided hair, yellow top, city street background',
  },
  {
    id: 'actor_liam_oconnor',
    name: "Liam O'Connor",
    age: 'adult',
    gender: 'male',
    skinTone: 'light',
    isPro: false,
    defaultVoiceId: 'voice_george_en_gb',
    look: 'man with red hair and freckles, checked shirt, pub interior background',
  },
  {
    id: 'actor_sam_rivera',
    name: 'Sam Rivera',
    age: 'adult',
    gender: 'non_binary',
    skinTone: 'medium',
    isPro: false,
    defaultVoiceId: 'voice_river_en_us',
    look: 'person with short dyed teal hair, black turtleneck, gallery background',
  },
  {
    id: 'actor_fatima_haddad',
    name: 'Fatima Haddad',
    age: 'middle_aged',
    gender: 'female',
    skinTone: 'medium_light',
    isPro: true,
    defaultVoiceId: null,
    look: 'woman in a burgundy headscarf and blazer, conference room background',
  },
  {
    id: 'actor_walter_brooks',
    name: 'Walter Brooks',
    age: 'senior',
    gender: 'male',
    skinTone: 'medium_dark',
    isPro: false,
    defaultVoiceId: 'voice_marcus_en_caribbean',
    look: 'older man with a white beard, tweed jacket, porch background',
  },
  {
    id: 'actor_chloe_dubois',
    name: 'Chloé Dubois',
    age: 'young_adult',
    gender: 'female',
    skinTone: 'light',
    isPro: false,
    defaultVoiceId: 'voice_camille_fr',
    look: 'young woman with a beret and striped shirt, Paris street background',
  },
  {
    id: 'actor_daniel_kim',
    name: 'Daniel Kim',
    age: 'adult',
    gender: 'male',
    skinTone: 'medium_light',
    isPro: true,
    defaultVoiceId: null,
    look: 'man in a white sneakers-and-blazer look, tech startup background',
  },
  {
    id: 'actor_greta_schmidt',
    name: 'Greta Schmidt',
    age: 'middle_aged',
    gender: 'female',
    skinTone: 'light',
    isPro: false,
    defaultVoiceId: 'voice_lena_de',
    look: 'woman with blonde short hair, green sweater, mountain cabin background',
  },
];
