// Chat.cs: conversation messages and chat options in their native form.
using System;
using System.Collections.Generic;

namespace Inlay
{
    public struct ChatMessage
    {
        public string Role, Content;
        public ChatMessage(string role, string content) { Role = role; Content = content; }

        internal static Native.inlay_chat_message[] ToNative(IList<ChatMessage> messages, List<IntPtr> owned)
        {
            var m = new Native.inlay_chat_message[messages.Count];
            for (int i = 0; i < m.Length; i++)
            {
                m[i].role = Utf8.Alloc(messages[i].Role, "a message role", owned);
                m[i].content = Utf8.Alloc(messages[i].Content, "a message content", owned);
            }
            return m;
        }
    }

    public sealed class ChatOptions
    {
        public string Template;            // Jinja source instead of the model's; null = the model's
        public Thinking Thinking = Thinking.Default;
        public bool AddGenerationPrompt = true;

        internal static Native.inlay_chat_params ToNative(ChatOptions o, List<IntPtr> owned)
        {
            o = o ?? new ChatOptions();
            var p = new Native.inlay_chat_params();
            Native.inlay_chat_params_init_size(ref p, Native.SizeOf<Native.inlay_chat_params>());
            p.thinking = (int)o.Thinking;
            p.add_generation_prompt = o.AddGenerationPrompt;
            if (o.Template != null) p.chat_template = Utf8.Alloc(o.Template, "the chat template", owned);
            return p;
        }
    }
}
