import type { GraphQLResolveInfo } from 'graphql';
import type { PetModel, CategoryModel, PetConnectionModel, PetEdgeModel, PageInfoModel, CreatePetPayloadModel, RateLimitModel } from '../models.js';
import type { GatewayContext } from '../context.js';
export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type RequireFields<T, K extends keyof T> = Omit<T, K> & { [P in K]-?: NonNullable<T[P]> };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  _FieldSet: { input: unknown; output: unknown; }
};

/** A category of pets, owned by another subgraph; this one only knows its id. */
export type Category = {
  __typename?: 'Category';
  id: Scalars['ID']['output'];
};

export type CreatePetInput = {
  /** A positive int64, as a decimal string. */
  categoryId: Scalars['ID']['input'];
  /** 1 to 200 characters. */
  name: Scalars['String']['input'];
  /** Defaults to AVAILABLE. */
  status?: InputMaybe<PetStatus>;
};

export type CreatePetPayload = {
  __typename?: 'CreatePetPayload';
  pet: Pet;
};

export type Mutation = {
  __typename?: 'Mutation';
  createPet: CreatePetPayload;
};


export type MutationCreatePetArgs = {
  input: CreatePetInput;
};

/**
 * Where a page of a connection starts and ends (Relay's PageInfo). Paging is forward only (`first` and
 * `after`); `last` and `before` are not supported.
 */
export type PageInfo = {
  __typename?: 'PageInfo';
  /** The last edge's cursor; null on an empty page. */
  endCursor?: Maybe<Scalars['String']['output']>;
  /** True when more pets follow this page: pass `endCursor` as `after` to get them. */
  hasNextPage: Scalars['Boolean']['output'];
  /**
   * True when the page starts after a cursor (`after` was given), false otherwise. With forward paging
   * only, this says whether `after` was given, as Relay's connection spec allows; it is not a count of
   * earlier pets.
   */
  hasPreviousPage: Scalars['Boolean']['output'];
  /** The first edge's cursor; null on an empty page. */
  startCursor?: Maybe<Scalars['String']['output']>;
};

/** An animal in the pet store. */
export type Pet = {
  __typename?: 'Pet';
  category: Category;
  /** int64 on the wire, written here as an exact decimal string. */
  id: Scalars['ID']['output'];
  name: Scalars['String']['output'];
  status?: Maybe<PetStatus>;
};

/** A page of pets (Relay connection). */
export type PetConnection = {
  __typename?: 'PetConnection';
  edges: Array<PetEdge>;
  nodes: Array<Pet>;
  pageInfo: PageInfo;
};

export type PetEdge = {
  __typename?: 'PetEdge';
  /** Opaque; pass it as `after` to continue after this pet. */
  cursor: Scalars['String']['output'];
  node: Pet;
};

/** Availability of a pet. REST values: available, pending, sold. */
export enum PetStatus {
  Available = 'AVAILABLE',
  Pending = 'PENDING',
  Sold = 'SOLD'
}

export type Query = {
  __typename?: 'Query';
  /** One pet by id, or null when there is none. */
  pet?: Maybe<Pet>;
  /** Pets in id order. `first` is 1..100; `after` is a cursor from a previous page. */
  pets: PetConnection;
  /**
   * The API key's rate-limit budget as far as the gateway knows it, and what this operation costs in
   * upstream requests. With `dryRun: true` nothing else of the operation runs and nothing is sent
   * upstream: the answer holds only this field, to price an operation before running it.
   */
  rateLimit: RateLimit;
};


export type QueryPetArgs = {
  id: Scalars['ID']['input'];
};


export type QueryPetsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  status?: InputMaybe<PetStatus>;
};


export type QueryRateLimitArgs = {
  dryRun?: InputMaybe<Scalars['Boolean']['input']>;
};

/** An API key's budget in its tightest window (the configured one, or the upstream's when it has less left), and an operation's cost. */
export type RateLimit = {
  __typename?: 'RateLimit';
  /** Upstream requests this operation is estimated to cost (an estimate: sharing and the cache can make it less). */
  cost: Scalars['Int']['output'];
  /** Requests the window allows. */
  limit: Scalars['Int']['output'];
  /** Requests left in it, as far as the gateway knows. */
  remaining: Scalars['Int']['output'];
  /** When the window next frees a request (ISO 8601); null when nothing is known to be spent. */
  resetAt?: Maybe<Scalars['String']['output']>;
  /** Requests spent in it. */
  used: Scalars['Int']['output'];
};



export type ResolverTypeWrapper<T> = Promise<T> | T;

export type ReferenceResolver<TResult, TReference, TContext> = (
      reference: TReference,
      context: TContext,
      info: GraphQLResolveInfo
    ) => Promise<TResult> | TResult;

      type ScalarCheck<T, S> = S extends true ? T : NullableCheck<T, S>;
      type NullableCheck<T, S> = Maybe<T> extends T ? Maybe<ListCheck<NonNullable<T>, S>> : ListCheck<T, S>;
      type ListCheck<T, S> = T extends (infer U)[] ? NullableCheck<U, S>[] : GraphQLRecursivePick<T, S>;
      export type GraphQLRecursivePick<T, S> = { [K in keyof T & keyof S]: ScalarCheck<T[K], S[K]> };
    

export type ResolverWithResolve<TResult, TParent, TContext, TArgs> = {
  resolve: ResolverFn<TResult, TParent, TContext, TArgs>;
};
export type Resolver<TResult, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = ResolverFn<TResult, TParent, TContext, TArgs> | ResolverWithResolve<TResult, TParent, TContext, TArgs>;

export type ResolverFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => Promise<TResult> | TResult;

export type SubscriptionSubscribeFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => AsyncIterable<TResult> | Promise<AsyncIterable<TResult>>;

export type SubscriptionResolveFn<TResult, TParent, TContext, TArgs> = (
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

export interface SubscriptionSubscriberObject<TResult, TKey extends string, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<{ [key in TKey]: TResult }, TParent, TContext, TArgs>;
  resolve?: SubscriptionResolveFn<TResult, { [key in TKey]: TResult }, TContext, TArgs>;
}

export interface SubscriptionResolverObject<TResult, TParent, TContext, TArgs> {
  subscribe: SubscriptionSubscribeFn<any, TParent, TContext, TArgs>;
  resolve: SubscriptionResolveFn<TResult, any, TContext, TArgs>;
}

export type SubscriptionObject<TResult, TKey extends string, TParent, TContext, TArgs> =
  | SubscriptionSubscriberObject<TResult, TKey, TParent, TContext, TArgs>
  | SubscriptionResolverObject<TResult, TParent, TContext, TArgs>;

export type SubscriptionResolver<TResult, TKey extends string, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> =
  | ((...args: any[]) => SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>)
  | SubscriptionObject<TResult, TKey, TParent, TContext, TArgs>;

export type TypeResolveFn<TTypes, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (
  parent: TParent,
  context: TContext,
  info: GraphQLResolveInfo
) => Maybe<TTypes> | Promise<Maybe<TTypes>>;

export type IsTypeOfResolverFn<T = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>> = (obj: T, context: TContext, info: GraphQLResolveInfo) => boolean | Promise<boolean>;

export type NextResolverFn<T> = () => Promise<T>;

export type DirectiveResolverFn<TResult = Record<PropertyKey, never>, TParent = Record<PropertyKey, never>, TContext = Record<PropertyKey, never>, TArgs = Record<PropertyKey, never>> = (
  next: NextResolverFn<TResult>,
  parent: TParent,
  args: TArgs,
  context: TContext,
  info: GraphQLResolveInfo
) => TResult | Promise<TResult>;

/** Mapping of federation types */
export type FederationTypes = {
  Pet: Pet;
};

/** Mapping of federation reference types */
export type FederationReferenceTypes = {
  Pet:
    ( { __typename: 'Pet' }
    & GraphQLRecursivePick<FederationTypes['Pet'], {"id":true}> );
};



/** Mapping between all available schema types and the resolvers types */
export type ResolversTypes = {
  Category: ResolverTypeWrapper<CategoryModel>;
  ID: ResolverTypeWrapper<Scalars['ID']['output']>;
  CreatePetInput: CreatePetInput;
  String: ResolverTypeWrapper<Scalars['String']['output']>;
  CreatePetPayload: ResolverTypeWrapper<CreatePetPayloadModel>;
  Mutation: ResolverTypeWrapper<Record<PropertyKey, never>>;
  PageInfo: ResolverTypeWrapper<PageInfoModel>;
  Boolean: ResolverTypeWrapper<Scalars['Boolean']['output']>;
  Pet: ResolverTypeWrapper<PetModel>;
  PetConnection: ResolverTypeWrapper<PetConnectionModel>;
  PetEdge: ResolverTypeWrapper<PetEdgeModel>;
  PetStatus: PetStatus;
  Query: ResolverTypeWrapper<Record<PropertyKey, never>>;
  Int: ResolverTypeWrapper<Scalars['Int']['output']>;
  RateLimit: ResolverTypeWrapper<RateLimitModel>;
};

/** Mapping between all available schema types and the resolvers parents */
export type ResolversParentTypes = {
  Category: CategoryModel;
  ID: Scalars['ID']['output'];
  CreatePetInput: CreatePetInput;
  String: Scalars['String']['output'];
  CreatePetPayload: CreatePetPayloadModel;
  Mutation: Record<PropertyKey, never>;
  PageInfo: PageInfoModel;
  Boolean: Scalars['Boolean']['output'];
  Pet: PetModel;
  PetConnection: PetConnectionModel;
  PetEdge: PetEdgeModel;
  Query: Record<PropertyKey, never>;
  Int: Scalars['Int']['output'];
  RateLimit: RateLimitModel;
};

export type CategoryResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Category'] = ResolversParentTypes['Category']> = {
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
};

export type CreatePetPayloadResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['CreatePetPayload'] = ResolversParentTypes['CreatePetPayload']> = {
  pet?: Resolver<ResolversTypes['Pet'], ParentType, ContextType>;
};

export type MutationResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Mutation'] = ResolversParentTypes['Mutation']> = {
  createPet?: Resolver<ResolversTypes['CreatePetPayload'], ParentType, ContextType, RequireFields<MutationCreatePetArgs, 'input'>>;
};

export type PageInfoResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['PageInfo'] = ResolversParentTypes['PageInfo']> = {
  endCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  hasNextPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  hasPreviousPage?: Resolver<ResolversTypes['Boolean'], ParentType, ContextType>;
  startCursor?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
};

export type PetResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Pet'] = ResolversParentTypes['Pet'], FederationReferenceType extends FederationReferenceTypes['Pet'] = FederationReferenceTypes['Pet']> = {
  __resolveReference?: ReferenceResolver<Maybe<ResolversTypes['Pet']> | FederationReferenceType, FederationReferenceType, ContextType>;
  category?: Resolver<ResolversTypes['Category'], ParentType, ContextType>;
  id?: Resolver<ResolversTypes['ID'], ParentType, ContextType>;
  name?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  status?: Resolver<Maybe<ResolversTypes['PetStatus']>, ParentType, ContextType>;
};

export type PetConnectionResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['PetConnection'] = ResolversParentTypes['PetConnection']> = {
  edges?: Resolver<Array<ResolversTypes['PetEdge']>, ParentType, ContextType>;
  nodes?: Resolver<Array<ResolversTypes['Pet']>, ParentType, ContextType>;
  pageInfo?: Resolver<ResolversTypes['PageInfo'], ParentType, ContextType>;
};

export type PetEdgeResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['PetEdge'] = ResolversParentTypes['PetEdge']> = {
  cursor?: Resolver<ResolversTypes['String'], ParentType, ContextType>;
  node?: Resolver<ResolversTypes['Pet'], ParentType, ContextType>;
};

export type QueryResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['Query'] = ResolversParentTypes['Query']> = {
  pet?: Resolver<Maybe<ResolversTypes['Pet']>, ParentType, ContextType, RequireFields<QueryPetArgs, 'id'>>;
  pets?: Resolver<ResolversTypes['PetConnection'], ParentType, ContextType, RequireFields<QueryPetsArgs, 'first'>>;
  rateLimit?: Resolver<ResolversTypes['RateLimit'], ParentType, ContextType, RequireFields<QueryRateLimitArgs, 'dryRun'>>;
};

export type RateLimitResolvers<ContextType = GatewayContext, ParentType extends ResolversParentTypes['RateLimit'] = ResolversParentTypes['RateLimit']> = {
  cost?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  limit?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  remaining?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
  resetAt?: Resolver<Maybe<ResolversTypes['String']>, ParentType, ContextType>;
  used?: Resolver<ResolversTypes['Int'], ParentType, ContextType>;
};

export type Resolvers<ContextType = GatewayContext> = {
  Category?: CategoryResolvers<ContextType>;
  CreatePetPayload?: CreatePetPayloadResolvers<ContextType>;
  Mutation?: MutationResolvers<ContextType>;
  PageInfo?: PageInfoResolvers<ContextType>;
  Pet?: PetResolvers<ContextType>;
  PetConnection?: PetConnectionResolvers<ContextType>;
  PetEdge?: PetEdgeResolvers<ContextType>;
  Query?: QueryResolvers<ContextType>;
  RateLimit?: RateLimitResolvers<ContextType>;
};

