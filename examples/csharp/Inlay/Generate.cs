// Generate.cs: generation options (from the library's defaults) and results.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Inlay
{
    public sealed class GenerateOptions
    {
        public int MaxTokens;
        public float Temperature, TopP, MinP, RepeatPenalty, FrequencyPenalty, PresencePenalty;
        public int TopK, PenaltyLastN;
        public ulong Seed;
        public bool IgnoreEos, AddBos, ParseSpecial;
        public string[] Stop = new string[0];

        /// <summary>The library's defaults (inlay_generate_params_init).</summary>
        public GenerateOptions()
        {
            var p = new Native.inlay_generate_params();
            Native.inlay_generate_params_init_size(ref p, Native.SizeOf<Native.inlay_generate_params>());
            MaxTokens = p.max_tokens; Temperature = p.temperature; TopK = p.top_k; TopP = p.top_p; MinP = p.min_p;
            RepeatPenalty = p.repeat_penalty; FrequencyPenalty = p.frequency_penalty; PresencePenalty = p.presence_penalty;
            PenaltyLastN = p.penalty_last_n; Seed = p.seed; IgnoreEos = p.ignore_eos; AddBos = p.add_bos;
            ParseSpecial = p.parse_special;
        }

        internal Native.inlay_generate_params ToNative(List<IntPtr> owned)
        {
            var p = new Native.inlay_generate_params();
            Native.inlay_generate_params_init_size(ref p, Native.SizeOf<Native.inlay_generate_params>());
            p.max_tokens = MaxTokens; p.temperature = Temperature; p.top_k = TopK; p.top_p = TopP; p.min_p = MinP;
            p.repeat_penalty = RepeatPenalty; p.frequency_penalty = FrequencyPenalty; p.presence_penalty = PresencePenalty;
            p.penalty_last_n = PenaltyLastN; p.seed = Seed; p.ignore_eos = IgnoreEos; p.add_bos = AddBos;
            p.parse_special = ParseSpecial;
            if (Stop != null && Stop.Length > 0)
            {
                IntPtr array = Marshal.AllocHGlobal(IntPtr.Size * Stop.Length);
                owned.Add(array);
                for (int i = 0; i < Stop.Length; i++)
                    Marshal.WriteIntPtr(array, i * IntPtr.Size, Utf8.Alloc(Stop[i], "a stop string", owned));
                p.stop = array;
                p.n_stop = (UIntPtr)Stop.Length;
            }
            return p;
        }
    }

    public struct Timings
    {
        public long PromptTokens, GeneratedTokens, PromptTokensReused;
        public double PrefillSeconds, DecodeSeconds, PrefillTokensPerSecond, DecodeTokensPerSecond;
    }

    /// <summary>What a generate or chat call produced.</summary>
    public sealed class Result
    {
        public string Text;
        public int[] Tokens;        // generated
        public int[] PromptTokens;  // processed by this call
        public StopReason StopReason;
        public Timings Timings;

        static int[] Copy(IntPtr p, UIntPtr n)
        {
            var a = new int[(int)n];
            if (a.Length > 0) Marshal.Copy(p, a, 0, a.Length);
            return a;
        }

        // Copies an inlay_result and frees it.
        internal static Result Take(IntPtr r)
        {
            try
            {
                UIntPtr n, np;
                IntPtr tokens = Native.inlay_result_tokens(r, out n);
                IntPtr prompt = Native.inlay_result_prompt_tokens(r, out np);
                var t = new Native.inlay_timings { struct_size = Native.SizeOf<Native.inlay_timings>() };
                Native.inlay_result_timings(r, ref t);
                return new Result
                {
                    Text = Utf8.Decode(Native.inlay_result_text(r)), Tokens = Copy(tokens, n), PromptTokens = Copy(prompt, np),
                    StopReason = Native.inlay_result_stop_reason(r),
                    Timings = new Timings
                    {
                        PromptTokens = t.prompt_tokens, GeneratedTokens = t.generated_tokens,
                        PromptTokensReused = t.prompt_tokens_reused, PrefillSeconds = t.prefill_s, DecodeSeconds = t.decode_s,
                        PrefillTokensPerSecond = t.prefill_tokens_per_s, DecodeTokensPerSecond = t.decode_tokens_per_s
                    }
                };
            }
            finally { Native.inlay_result_free(r); }
        }
    }
}
